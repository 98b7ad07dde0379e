# tcmprof ITCM plan, build-id 450a182c99fee21c1c221646e7a00b984907d79f: 3 functions, predicted 84 bytes incl. padding and veneers.
# include() it after find_package(Zephyr). Needs Zephyr >= 4.0 (FILTER) and CONFIG_CODE_DATA_RELOCATION=y,
# which tcmprof plan writes beside this file as .conf: pass it with -DEXTRA_CONF_FILE.
zephyr_code_relocate(FILES "/tcmprof/profile/testdata/checksum.c" LOCATION ITCM_TEXT FILTER "^\\.text\\.net_checksum\$")
zephyr_code_relocate(FILES "/tcmprof/profile/testdata/fw.c" LOCATION ITCM_TEXT FILTER "^\\.text\\.hash_buf\$|^\\.text\\.leaf_add\$")
