#!/usr/bin/env python3
"""Writes a jar holding one class t/Big whose constant pool has FILL entries
(Utf8 fillers) and whose static method f(URL) returns url.openConnection():
a network call site in a class with (or without) room for the hooks' pool
entries.  usage: bigpool.py FILL OUT.jar"""
import struct,sys,zipfile
pool=[]
def add(b): pool.append(b); return len(pool)
def utf8(s): s=s.encode(); return add(b'\x01'+struct.pack('>H',len(s))+s)
def cls(n): return add(b'\x07'+struct.pack('>H',utf8(n)))
def nat(n,d): return add(b'\x0c'+struct.pack('>HH',utf8(n),utf8(d)))
def mref(c,n,d): return add(b'\x0a'+struct.pack('>HH',c,nat(n,d)))
this=cls('t/Big'); sup=cls('java/lang/Object')
oc=mref(cls('java/net/URL'),'openConnection','()Ljava/net/URLConnection;')
code_n=utf8('Code'); mn=utf8('f'); md=utf8('(Ljava/net/URL;)Ljava/lang/Object;')
fill=int(sys.argv[1])
i=0
while len(pool)<fill: utf8('x%d'%i); i+=1
code=bytes([0x2a,0xb6])+struct.pack('>H',oc)+bytes([0xb0])
out=b'\xca\xfe\xba\xbe'+struct.pack('>HHH',0,52,len(pool)+1)+b''.join(pool)
out+=struct.pack('>HHHH',0x21,this,sup,0)+struct.pack('>H',0)
out+=struct.pack('>H',1)+struct.pack('>HHHH',9,mn,md,1)
out+=struct.pack('>HIHHI',code_n,12+len(code),1,1,len(code))+code+struct.pack('>HH',0,0)
out+=struct.pack('>H',0)
with zipfile.ZipFile(sys.argv[2],'w') as z: z.writestr('t/Big.class',out)
