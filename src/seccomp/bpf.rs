//! A small classic-BPF assembler for the seccomp filter (`seccomp(2)`, the subset of
//! `Documentation/networking/filter.rst` that seccomp accepts): instructions with forward
//! jumps to labels, resolved once the program is complete.

/// One instruction, laid out as the kernel's `struct sock_filter` (`linux/filter.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    /// Opcode (`BPF_LD | BPF_W | BPF_ABS`, …).
    pub code: u16,
    /// Jump offset when the test holds.
    pub jt: u8,
    /// Jump offset when it does not.
    pub jf: u8,
    /// The constant operand.
    pub k: u32,
}

impl Insn {
    /// The eight bytes the kernel reads for this instruction (native byte order).
    pub fn to_bytes(self) -> [u8; 8] {
        let (c, k) = (self.code.to_ne_bytes(), self.k.to_ne_bytes());
        [c[0], c[1], self.jt, self.jf, k[0], k[1], k[2], k[3]]
    }
}

/// `BPF_LD | BPF_W | BPF_ABS`: A = the 32-bit word at byte `k` of `struct seccomp_data`.
const LD_W_ABS: u16 = 0x20;
/// `BPF_ALU | BPF_AND | BPF_K`.
const AND_K: u16 = 0x54;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const JEQ_K: u16 = 0x15;
/// `BPF_JMP | BPF_JGE | BPF_K`.
const JGE_K: u16 = 0x35;
/// `BPF_RET | BPF_K`.
const RET_K: u16 = 0x06;

/// Where a conditional jump goes: the next instruction, or a label placed later.
#[derive(Debug, Clone, Copy)]
pub enum To {
    /// Fall through.
    Next,
    /// A label from [`Asm::label`], placed with [`Asm::place`] after the jump.
    Label(usize),
}

/// A program under construction.
#[derive(Debug, Default)]
pub struct Asm {
    prog: Vec<Insn>,
    /// For each label, where it was placed.
    labels: Vec<Option<usize>>,
    /// Jumps to patch: (instruction, label, true branch).
    fixups: Vec<(usize, usize, bool)>,
}

impl Asm {
    /// A new label, to jump to before it is placed.
    pub fn label(&mut self) -> usize {
        self.labels.push(None);
        self.labels.len() - 1
    }

    /// Place `label` at the next instruction.
    pub fn place(&mut self, label: usize) {
        self.labels[label] = Some(self.prog.len());
    }

    /// A = the word at byte `off` of `struct seccomp_data`.
    pub fn load(&mut self, off: u32) {
        self.prog.push(Insn { code: LD_W_ABS, jt: 0, jf: 0, k: off });
    }

    /// A &= `k`.
    pub fn and(&mut self, k: u32) {
        self.prog.push(Insn { code: AND_K, jt: 0, jf: 0, k });
    }

    /// Return `action` (`SECCOMP_RET_*`).
    pub fn ret(&mut self, action: u32) {
        self.prog.push(Insn { code: RET_K, jt: 0, jf: 0, k: action });
    }

    /// If A == `k` go to `yes`, else to `no`.
    pub fn jeq(&mut self, k: u32, yes: To, no: To) {
        self.jump(JEQ_K, k, yes, no);
    }

    /// If A >= `k` go to `yes`, else to `no`.
    pub fn jge(&mut self, k: u32, yes: To, no: To) {
        self.jump(JGE_K, k, yes, no);
    }

    fn jump(&mut self, code: u16, k: u32, yes: To, no: To) {
        let at = self.prog.len();
        for (to, branch) in [(yes, true), (no, false)] {
            if let To::Label(l) = to {
                self.fixups.push((at, l, branch));
            }
        }
        self.prog.push(Insn { code, jt: 0, jf: 0, k });
    }

    /// The program with every jump resolved.
    ///
    /// # Errors
    /// A label never placed, placed before its jump, or more than 255 instructions ahead: a
    /// bug in the filter's source, which `program_builds_for_this_machine` catches.
    pub fn finish(mut self) -> anyhow::Result<Vec<Insn>> {
        for (at, label, branch) in self.fixups {
            let off = self.labels[label]
                .and_then(|to| to.checked_sub(at + 1))
                .and_then(|off| u8::try_from(off).ok())
                .ok_or_else(|| anyhow::anyhow!("seccomp: BPF jump {at} to label {label} does not resolve"))?;
            let i = &mut self.prog[at];
            if branch {
                i.jt = off;
            } else {
                i.jf = off;
            }
        }
        Ok(self.prog)
    }
}
