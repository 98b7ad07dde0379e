/* SPDX-License-Identifier: Apache-2.0 */
// C++ in the test firmware: a class template member function, so that the
// profile's function names are demangled and their system names mangled.
#include <stdint.h>

namespace dsp {
template <int N> struct Fir {
	int32_t taps[N];
	int32_t state[N];

	__attribute__((noinline)) int32_t step(int32_t x)
	{
		int32_t acc = 0;
		for (int i = N - 1; i > 0; i--)
			state[i] = state[i - 1];
		state[0] = x;
		for (int i = 0; i < N; i++)
			acc += taps[i] * state[i];
		return acc;
	}
};
} // namespace dsp

static dsp::Fir<4> fir = {{1, 2, 3, 4}, {0, 0, 0, 0}};

extern "C" int32_t dsp_step(int32_t x)
{
	return fir.step(x);
}
