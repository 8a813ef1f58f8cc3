#if 0
#if x
#elif 1
#else
#endif
cudaA
#else
cudaB(R"d(
)d" u8R"(x)", L'c', 0x1F'u)
#endif
asm("mov.u32 %0;"); k<<<a, b>>>(c) >>= 5; /* open
