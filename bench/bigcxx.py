#!/usr/bin/env python3
"""bigcxx.py — write the sources of a large C++ program for bench/lines.

Usage: bench/bigcxx.py DIR [UNITS]

Each of UNITS translation units (default 48) defines 8 structs and, for
each, functions that instantiate standard containers and algorithms
(std::map, std::unordered_map, std::vector, std::sort, std::function,
std::string formatting) on it: at -O2 -g that is a few MB of DWARF per
unit, with deep inline chains from the standard library, as real C++
services have. main() runs every unit's work() in a loop on two threads,
so a CPU profile touches thousands of distinct addresses across all of
them.
"""
import os
import sys

UNIT = r'''
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace u{u} {{
{structs}
}}

unsigned long work{u}(unsigned long seed)
{{
	unsigned long acc = seed;
{calls}
	return acc;
}}
'''

STRUCT = r'''
struct S{k} {{
	unsigned long a, b;
	std::string name;
	bool operator<(const S{k} &o) const {{ return a < o.a || (a == o.a && b < o.b); }}
}};

__attribute__((noinline)) unsigned long churn{k}(unsigned long seed)
{{
	std::vector<S{k}> v;
	std::map<unsigned long, S{k}> m;
	std::unordered_map<std::string, unsigned long> h;
	std::function<unsigned long(const S{k} &)> f = [seed](const S{k} &s) {{ return s.a * {k}u + s.b + seed; }};
	for (unsigned long i = 0; i < 48; i++) {{
		S{k} s{{(seed * 2654435761u + i * {k}u) % 1000, i, std::to_string(i * {k}u + seed % 7)}};
		v.push_back(s);
		m[s.a] = s;
		h[s.name] += i;
	}}
	std::sort(v.begin(), v.end());
	unsigned long acc = 0;
	for (const auto &s : v)
		acc += f(s);
	for (const auto &kv : m)
		acc ^= kv.second.b << 1;
	for (const auto &kv : h)
		acc += kv.second + kv.first.size();
	return acc;
}}
'''

MAIN = r'''
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

{decls}

static volatile unsigned long sink;

static void *spin(void *arg)
{{
	unsigned long x = (unsigned long)arg;
	for (;;) {{
{calls}
		sink = x;
	}}
	return nullptr;
}}

int main()
{{
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], nullptr, spin, (void *)(i + 1));
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}}
'''


def main():
    out = sys.argv[1]
    units = int(sys.argv[2]) if len(sys.argv) > 2 else 48
    os.makedirs(out, exist_ok=True)
    for u in range(units):
        structs = "".join(STRUCT.format(k=u * 8 + k + 1) for k in range(8))
        calls = "".join("\tacc += u{u}::churn{k}(acc);\n".format(u=u, k=u * 8 + k + 1) for k in range(8))
        path = os.path.join(out, "unit%03d.cc" % u)
        text = UNIT.format(u=u, structs=structs, calls=calls)
        if not os.path.exists(path) or open(path).read() != text:
            with open(path, "w") as f:
                f.write(text)
    decls = "".join("unsigned long work%d(unsigned long);\n" % u for u in range(units))
    calls = "".join("\t\tx = work%d(x);\n" % u for u in range(units))
    with open(os.path.join(out, "main.cc"), "w") as f:
        f.write(MAIN.format(decls=decls, calls=calls))


main()
