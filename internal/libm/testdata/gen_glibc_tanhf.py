# Writes glibc_tanhf.bin: (x, tanhf(x), expm1f(x)) float32 triples from this
# machine's glibc (2.36, the fdlibm tanhf/expm1f); half of them where tanhf
# is not the correctly rounded value. Run from internal/libm.
import ctypes, struct, random, math
libm=ctypes.CDLL('libm.so.6')
for fn in ('tanhf','expm1f'):
    getattr(libm,fn).restype=ctypes.c_float; getattr(libm,fn).argtypes=[ctypes.c_float]
f32=lambda x: struct.unpack('<f',struct.pack('<f',x))[0]
random.seed(3)
plain,odd=[],[]
tries=0
while (len(plain)<2000 or len(odd)<2000) and tries<5000000:
    tries+=1
    x=f32(random.choice([-1,1])*2**random.uniform(-30,5))
    t=libm.tanhf(x)
    if t!=f32(math.tanh(x)):
        if len(odd)<2000: odd.append(x)
    elif len(plain)<2000: plain.append(x)
edge=[0.0,-0.0,1e-30,0.5,1.0,-1.0,0.3465,0.3466,1.0397,22.0,-22.0,30.0,88.0,-88.0,89.0,float('inf'),-float('inf')]
with open('testdata/glibc_tanhf.bin','wb') as fo:
    for x in plain+odd+[f32(e) for e in edge]:
        fo.write(struct.pack('<fff',x,libm.tanhf(x),libm.expm1f(x)))
print(len(plain),len(odd),tries)
