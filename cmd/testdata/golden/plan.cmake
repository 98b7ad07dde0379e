# tcmprof ITCM plan, build-id 450a182c99fee21c1c221646e7a00b984907d79f: 3 functions, predicted 84 bytes incl. padding and veneers.
# Needs CONFIG_CODE_DATA_RELOCATION=y in prj.conf and Zephyr >= 4.0 (FILTER).
zephyr_code_relocate(FILES "/tcmprof/profile/testdata/checksum.c" LOCATION ITCM_TEXT FILTER "^\\.text\\.net_checksum\$")
zephyr_code_relocate(FILES "/tcmprof/profile/testdata/fw.c" LOCATION ITCM_TEXT FILTER "^\\.text\\.hash_buf\$|^\\.text\\.leaf_add\$")
