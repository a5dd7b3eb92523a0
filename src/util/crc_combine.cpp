#include "util/crc_combine.hpp"

namespace gw {
namespace {

// Polynomials modulo the CRC32C polynomial in the CRC's reflected bit order:
// bit 31 holds x^0, bit 30 x^1, and so on.
constexpr uint32_t kPoly = 0x82F63B78u;

// a * b mod P.
constexpr uint32_t mul_mod(uint32_t a, uint32_t b) {
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
    }
    return p;
}

// x^(2^k) mod P for k = 0..66: enough for any 64-bit byte count (8 bits each).
struct Powers {
    uint32_t v[67];
};
constexpr Powers make_powers() {
    Powers t{};
    t.v[0] = 1u << 30;  // x^1
    for (int k = 1; k < 67; ++k) t.v[k] = mul_mod(t.v[k - 1], t.v[k - 1]);
    return t;
}
constexpr Powers kPowers = make_powers();

}  // namespace

// Appending len_b zero bytes to A multiplies its register by x^(8 len_b);
// the pre- and post-inversions of the two CRCs cancel (as in zlib's
// crc32_combine), so crc(A || B) = crc(A) * x^(8 len_b) + crc(B).
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
    uint32_t op = 1u << 31;  // x^0
    for (int k = 3; len_b != 0; len_b >>= 1, ++k)
        if (len_b & 1) op = mul_mod(kPowers.v[k], op);
    return mul_mod(op, crc_a) ^ crc_b;
}

}  // namespace gw
