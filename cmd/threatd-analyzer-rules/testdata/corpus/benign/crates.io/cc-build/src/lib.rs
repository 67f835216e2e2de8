extern "C" { fn impl_add(a: i32, b: i32) -> i32; }
pub fn add(a: i32, b: i32) -> i32 { unsafe { impl_add(a, b) } }
