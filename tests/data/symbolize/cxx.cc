// Oracle fixture: C++ methods, templates, namespaces, lambdas and inlined methods.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "fixture.h"

namespace geo {

struct Point {
	int x, y;
	__attribute__((always_inline)) int norm1() const { return (x < 0 ? -x : x) + (y < 0 ? -y : y); }
	__attribute__((noinline)) Point scaled(int k) const { return Point{x * k, y * k}; }
};

template <typename T> class Accumulator {
      public:
	__attribute__((noinline)) void add(const T &v) { items_.push_back(v); }
	template <typename F> __attribute__((noinline)) long fold(F f) const
	{
		long acc = 0;
		for (const T &v : items_)
			acc += f(v);
		return acc;
	}

      private:
	std::vector<T> items_;
};

} // namespace geo

static __attribute__((noinline)) long sum_points(int n)
{
	geo::Accumulator<geo::Point> acc;
	for (int i = 0; i < n; i++)
		acc.add(geo::Point{i, -i}.scaled(3));
	return acc.fold([](const geo::Point &p) { return (long)p.norm1(); });
}

template <int N> __attribute__((noinline)) int unrolled(int v)
{
	int s = 0;
	for (int i = 0; i < N; i++)
		s += (v >> i) & 1;
	return s;
}

extern "C" int cxx_entry(int n)
{
	geo::Accumulator<int> ints;
	for (int i = 0; i < n; i++)
		ints.add(i * i);
	long a = ints.fold([n](int v) { return (long)v * n; });
	std::vector<int> v{5, 3, 9, 1};
	std::sort(v.begin(), v.end());
	std::printf("%d\n", v[0]);
	return (int)(a + sum_points(n) + unrolled<8>(n) + unrolled<13>(n));
}
