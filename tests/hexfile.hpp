// The hex file format of tests/vectors and fuzz corpora: lines starting with
// '#' are comments, then hex digits with any whitespace. Shared by the test
// suites, the vector generator and the fuzz replay driver (no gtest dependency).
#pragma once

#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gwhex {

// Bytes of the file at `path`; *ok (if given) is false if it cannot be read
// or holds an odd number of digits.
inline std::vector<uint8_t> read(const std::string& path, bool* ok = nullptr) {
    std::ifstream in(path);
    std::vector<uint8_t> out;
    std::string line, digits;
    bool good = static_cast<bool>(in);
    while (std::getline(in, line)) {
        if (!line.empty() && line[0] == '#') continue;
        for (char c : line)
            if (std::isxdigit(static_cast<unsigned char>(c))) digits += c;
    }
    if (digits.size() % 2) good = false;
    for (size_t i = 0; i + 1 < digits.size(); i += 2)
        out.push_back(static_cast<uint8_t>(std::stoul(digits.substr(i, 2), nullptr, 16)));
    if (ok) *ok = good;
    return out;
}

// The file text for `bytes`: each line of `comment` as a '#' line, then 32
// bytes per line in lower-case hex.
inline std::string format(const std::vector<uint8_t>& bytes, const std::string& comment) {
    std::ostringstream s;
    std::istringstream c(comment);
    std::string line;
    while (std::getline(c, line)) s << "# " << line << "\n";
    static const char* digits = "0123456789abcdef";
    for (size_t i = 0; i < bytes.size(); ++i) {
        s << digits[bytes[i] >> 4] << digits[bytes[i] & 15];
        if (i % 32 == 31 || i + 1 == bytes.size()) s << "\n";
    }
    return s.str();
}

// Write format(bytes, comment) to `path`; false if it cannot be written.
inline bool write(const std::string& path, const std::vector<uint8_t>& bytes,
                  const std::string& comment) {
    std::ofstream out(path);
    out << format(bytes, comment);
    return static_cast<bool>(out.flush());
}

}  // namespace gwhex
