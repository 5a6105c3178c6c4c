# Writes glibc_sincosf.bin: (x, sinf(x), cosf(x)) as little-endian float32
# triples, from this machine's glibc (x86-64; FMA build on FMA CPUs).
# Run: python3 testdata/gen_glibc.py  (from internal/libm)
import ctypes, math, random, struct
libm = ctypes.CDLL('libm.so.6')
for f in ('sinf', 'cosf'):
    getattr(libm, f).restype = ctypes.c_float
    getattr(libm, f).argtypes = [ctypes.c_float]
f32 = lambda x: struct.unpack('<f', struct.pack('<f', x))[0]
random.seed(1)
plain, odd = [], []
while len(plain) < 3000 or len(odd) < 3000:
    r = random.random()
    if r < 0.4: x = random.uniform(-4, 4)
    elif r < 0.7: x = random.uniform(-120, 120)
    elif r < 0.9: x = random.uniform(-5000, 5000)
    else: x = random.uniform(-1e7, 1e7)
    x = f32(x)
    s, c = libm.sinf(x), libm.cosf(x)
    # "odd": glibc differs from the correctly rounded value
    if s != f32(math.sin(x)) or c != f32(math.cos(x)):
        if len(odd) < 3000: odd.append((x, s, c))
    elif len(plain) < 3000:
        plain.append((x, s, c))
edge = [0.0, -0.0, 1e-5, 3e-4, 0.785, 0.7854, 119.9, 120.0, 120.1, 1e30, 3.4e38, -3.4e38]
rows = plain + odd + [(f32(x), libm.sinf(f32(x)), libm.cosf(f32(x))) for x in edge]
with open('testdata/glibc_sincosf.bin', 'wb') as fo:
    for x, s, c in rows:
        fo.write(struct.pack('<fff', x, s, c))
print(len(rows), 'rows')
