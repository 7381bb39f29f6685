/*
 * rv32imc cycle-model microbenchmarks (qemu-system-riscv32 -M virt -bios none): each
 * sequence sits between two calls of nm_mark; the first pair brackets the call alone,
 * the baseline the host subtracts. Order: host/neuromotor/boards/cycles.py
 * (MICROBENCHMARKS_RV32). Exit through the virt machine's test device.
 */
    .option norvc
    .text
    .global _start
_start:
    la a0, buf
    sw a0, 0(a0)
    li t0, 100
    li t1, 7
    call nm_mark
    call nm_mark                 # baseline
# alu4: four independent ALU operations
    addi a1, a0, 1
    addi a2, a0, 2
    addi a3, a0, 3
    addi a4, a0, 4
    call nm_mark
# load_use: the next instruction reads the loaded register
    lw a1, 0(a0)
    addi a2, a1, 1
    call nm_mark
# load_nouse
    lw a1, 0(a0)
    addi a2, a0, 1
    call nm_mark
# mul_div
    mul a1, t0, t1
    div a2, t0, t1
    call nm_mark
# branch_taken: a taken forward branch
    beq zero, zero, 1f
    nop
1:
    call nm_mark
# branch_not_taken
    bne zero, zero, 9f
    call nm_mark
# compressed: c.lw then a compressed use, c.addi
    .option rvc
    c.lw a1, 0(a0)
    c.addi a1, 1
    c.li a2, 3
    .option norvc
    call nm_mark
9:
    li t0, 0x5555                # virt test device: exit status 0
    li t1, 0x100000
    sw t0, 0(t1)
2:
    j 2b

    .global nm_mark
nm_mark:
    ret

    .bss
    .balign 8
buf:
    .space 64
