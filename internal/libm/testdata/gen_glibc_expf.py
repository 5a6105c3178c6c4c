# Writes glibc_expf.bin: (x, expf(x)) float32 pairs from this machine's glibc;
# half of them where glibc is not correctly rounded. Run from internal/libm.
import ctypes, struct, random, math
libm=ctypes.CDLL('libm.so.6')
libm.expf.restype=ctypes.c_float; libm.expf.argtypes=[ctypes.c_float]
f32=lambda x: struct.unpack('<f',struct.pack('<f',x))[0]
random.seed(2)
plain,odd=[],[]
tries=0
while (len(plain)<3000 or len(odd)<3000) and tries<5000000:
    tries+=1
    r=random.random()
    x = random.uniform(-20,20) if r<0.7 else random.uniform(-104,89)
    x=f32(x); e=libm.expf(x)
    try: cr=f32(math.exp(x))
    except OverflowError: cr=float('inf')
    if e!=cr:
        if len(odd)<3000: odd.append((x,e))
    elif len(plain)<3000: plain.append((x,e))
edge=[0.0,-0.0,1e-30,-1e-30,88.0,88.72,88.73,-87.3,-103.9,-104.0,-103.28,float('inf'),-float('inf'),10.5,-10.5]
rows=plain+odd+[(f32(x),libm.expf(f32(x))) for x in edge]
with open('testdata/glibc_expf.bin','wb') as fo:
    for x,e in rows: fo.write(struct.pack('<ff',x,e))
print(len(plain),len(odd),tries)
