fn main() {
    println!("cargo:rerun-if-changed=src/c/impl.c");
    cc::Build::new().file("src/c/impl.c").compile("impl");
}
