/* SPDX-License-Identifier: Apache-2.0 */
// C++ for the symbolizer: namespaces, templates with inlined members,
// a template taking a lambda (GCC emits no linkage name for it), virtual
// methods called through a base pointer, and an overloaded operator.
#include <stdint.h>

namespace dsp {
namespace filt {

template <typename T, unsigned N> class Fir {
  public:
	T step(T x)
	{
		for (unsigned i = N - 1; i > 0; i--)
			hist_[i] = hist_[i - 1];
		hist_[0] = x;
		return dot();
	}

  private:
	T dot() const
	{
		T acc = 0;
		for (unsigned i = 0; i < N; i++)
			acc += hist_[i] * coef_[i];
		return acc;
	}
	T hist_[N] = {};
	T coef_[N] = {1, 2, 3, 4, 5, 6, 7, 8};
};

} // namespace filt

template <typename F> __attribute__((noinline)) uint32_t apply(F f, uint32_t n)
{
	uint32_t acc = 0;
	for (uint32_t i = 0; i < n; i++)
		acc += f(i);
	return acc;
}

} // namespace dsp

namespace net {
namespace ip {

struct Route {
	uint32_t prefix, mask;
};

class Iface {
  public:
	virtual ~Iface() {}
	virtual uint32_t mtu() const = 0;
	__attribute__((noinline)) uint32_t lookup(unsigned long dst) const
	{
		for (unsigned i = 0; i < 4; i++)
			if ((dst & routes_[i].mask) == routes_[i].prefix)
				return i + mtu();
		return 0;
	}

  protected:
	Route routes_[4] = {{0x0a000000, 0xff000000}, {0xc0a80000, 0xffff0000}, {0, 0}, {1, 1}};
};

class Eth : public Iface {
  public:
	uint32_t mtu() const override { return 1500; }
};

class Loop : public Iface {
  public:
	uint32_t mtu() const override { return 65536; }
};

} // namespace ip
} // namespace net

struct Vec2 {
	int32_t x, y;
	Vec2 operator+(const Vec2 &o) const { return {x + o.x, y + o.y}; }
};

namespace net {
namespace ip {
uint32_t fold_checksum(uint32_t sum);
}
} // namespace net

static net::ip::Eth eth;
static net::ip::Loop loop;

__attribute__((noinline)) static uint32_t route(const net::ip::Iface &i, uint32_t dst)
{
	return i.lookup(dst) + i.mtu();
}

extern "C" uint32_t cpp_entry(uint32_t x)
{
	static dsp::filt::Fir<int32_t, 8> fir;
	int32_t y = 0;
	for (uint32_t i = 0; i < (x & 15); i++)
		y += fir.step(static_cast<int32_t>(x + i));
	uint32_t k = x ^ 0x5a;
	uint32_t s = dsp::apply([k](uint32_t i) { return (i * k) ^ (i >> 2); }, x & 31);
	s += dsp::apply([](uint32_t i) { return i * i; }, x & 7);
	Vec2 v = Vec2{static_cast<int32_t>(x), 2} + Vec2{3, static_cast<int32_t>(s)};
	const net::ip::Iface *ifs[2] = {&eth, &loop};
	return static_cast<uint32_t>(y + v.x + v.y) + s + route(*ifs[x & 1], x) + net::ip::fold_checksum(s);
}

namespace net {
namespace ip {

// ITCM code with a C++ name: in <variant>.cxxorigin.elf it sits at the
// ITCM origin, where only its linkage name tells it from the removed
// functions' DWARF.
__attribute__((section(".itcm"), noinline)) uint32_t fold_checksum(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

// Never called: removed by --gc-sections.
uint32_t unused_route_count(const Iface &i, unsigned long dst)
{
	uint32_t n = 0;
	for (unsigned long d = dst; d < dst + 64; d += 8)
		n += i.lookup(d) != 0;
	return n;
}

} // namespace ip
} // namespace net
