/* Deterministic pseudo-random numbers (xoshiro256**, seeded through splitmix64).
 *
 * Everything seeded in thpemu (simulator scenarios, fragmentation recipes, device
 * jitter, A/B run order, bootstrap resampling) uses this generator so that the same
 * seed gives the same result on every machine.
 */
#ifndef THPEMU_UTIL_RNG_H
#define THPEMU_UTIL_RNG_H

#include <math.h>
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

static inline uint64_t rng_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = rng_splitmix64(&seed);
}

static inline uint64_t rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rng_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rng_rotl(s[3], 45);
	return result;
}

/* Uniform in [0, 1). */
static inline double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n), n > 0 (Lemire's nearly-divisionless method). */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return (uint64_t)(((__uint128_t)rng_next(r) * n) >> 64);
}

/* Standard normal (Box-Muller; one value per call, deterministic). */
static inline double rng_normal(struct rng *r)
{
	double u1 = rng_unit(r), u2 = rng_unit(r);

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
