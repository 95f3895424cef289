# What a trace file holds per stream (meta, routine ring or mixed chunks, kept chunks): bytes and
# the most frequent calls of each, read straight from the chunks (trace_format.h), for checking
# what the flight recorder keeps. Usage: trace_streams.py FILE.cuprobe
import struct,sys,collections
f=open(sys.argv[1],'rb').read()
H=64*1024; C=64*1024; CH=1408
n=(len(f)-H)//C
names={}
per=collections.defaultdict(collections.Counter); byt=collections.Counter()
for i in range(n):
    magic,tid,used,seq=struct.unpack_from('<IIII',f,H+i*C)
    if magic!=0x4b4e4843: continue
    k='meta' if tid==0 else ('kept' if tid&0x80000000 else 'routine')
    base=H+i*C+CH; off=0
    while off+8<=used:
        typ,flags,size,aux,aux2=struct.unpack_from('<BBHHh',f,base+off)
        if size<8: break
        if typ==2:
            lib,nl,fl=struct.unpack_from('<HHI',f,base+off+8)
            names[aux]=f[base+off+32:base+off+32+nl].decode()
        if typ==1: per[k][aux]+=1
        else: per[k]['rec%d'%typ]+=1
        byt[k]+=size
        off+=size
for k,c in per.items():
    print(k, byt[k]//1024,'KiB', [(names.get(a,a),v) for a,v in c.most_common(12)])
