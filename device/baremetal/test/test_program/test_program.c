/* The program under test is nm_baremetal.c with nm_generic.c (test_build_src = yes):
 * test/test_custom_runner.py runs it under QEMU and checks its NMB/1 bench line. */
typedef int nm_test_program_unit;
