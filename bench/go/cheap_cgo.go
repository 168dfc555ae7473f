package bench

// #include <malloc.h>
// static unsigned long long c_heap_in_use(void) { struct mallinfo2 m = mallinfo2(); return (unsigned long long)(m.uordblks + m.hblkhd); }
import "C"

// cHeapInUse is the C heap in use (glibc mallinfo2: small blocks plus
// mmapped ones), where the binding's groups live (Rust uses malloc).
func cHeapInUse() float64 { return float64(C.c_heap_in_use()) }
