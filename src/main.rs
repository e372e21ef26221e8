use std::process::ExitCode;

fn main() -> ExitCode {
    mnemofs::cli::main()
}
