int util_hot(int x);
int util_cold(int x);
int util_mid(int x);
