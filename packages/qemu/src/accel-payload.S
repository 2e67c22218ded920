# The KVM probe's long-mode payload: the source of LONG_MODE_PAYLOAD_HEX in accel.ts (that hex is
# this file assembled; test/accel-payload.test.ts checks they agree). QEMU's PVH loader enters it
# in 32-bit protected mode, paging off, at 0x100000 (where it is linked). It maps the first 2 MiB,
# enters long mode, runs a loop with calls (a 64-bit guest's first work), writes the marker that
# accel.ts appends after it to COM1 and exits QEMU through isa-debug-exit.
#
#   as --64 -o payload.o accel-payload.S && objcopy -O binary -j .text payload.o payload.bin
#
# Absolute addresses are written as `label - start + BASE`, so no linker is needed.
        .set BASE, 0x100000
        .text
        .code32
start:
        cli
        mov     $0x10000, %edi          # three zeroed pages at 64 KiB: PML4, PDPT, PD
        xor     %eax, %eax
        mov     $0xc00, %ecx            # 3 * 4096 bytes, 4 at a time
        rep stosl
        movl    $0x11003, 0x10000       # PML4[0] -> PDPT, present + writable
        movl    $0x12003, 0x11000       # PDPT[0] -> PD
        movl    $0x83, 0x12000          # PD[0]: a 2 MiB page at 0, present + writable + large
        mov     %cr4, %eax
        or      $0x20, %eax             # PAE
        mov     %eax, %cr4
        mov     $0x10000, %eax
        mov     %eax, %cr3
        mov     $0xc0000080, %ecx       # EFER
        rdmsr
        or      $0x100, %eax            # LME
        wrmsr
        mov     %cr0, %eax
        or      $0x80000001, %eax       # PG + PE: long mode is active
        mov     %eax, %cr0
        lgdtl   gdt_pointer - start + BASE
        ljmp    $0x8, $long_mode - start + BASE

        .code64
long_mode:
        mov     $0x10, %ax
        mov     %eax, %ds
        mov     %eax, %ss
        mov     $0x90000, %rsp
        xor     %rbx, %rbx
        mov     $1000000, %rcx
busy:
        add     %rcx, %rbx
        call    nothing
        loop    busy
        lea     marker(%rip), %rsi
        mov     $0x3f8, %dx             # COM1
print:
        lodsb
        test    %al, %al
        je      done
        out     %al, (%dx)
        jmp     print
done:
        mov     $0xf4, %dx              # isa-debug-exit (iobase 0xf4)
        mov     $3, %al
        out     %al, (%dx)
        hlt
nothing:
        ret

        .balign 8
gdt:
        .quad   0
        .quad   0x00209a0000000000      # 0x08: 64-bit code
        .quad   0x0000920000000000      # 0x10: data
gdt_pointer:
        .word   gdt_pointer - gdt - 1
        .long   gdt - start + BASE
marker:                                 # accel.ts appends the marker line and a NUL here
