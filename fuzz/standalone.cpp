// Replay driver: runs a fuzz target over files and directories (recursively)
// without libFuzzer, so corpora, golden vectors (*.hex, decoded first) and
// saved crash reproducers run as ordinary tests with any compiler. If an
// input crashes the target, its path is printed before the process dies.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "hexfile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string current;  // the input being replayed

extern "C" void on_fatal(int sig) {
    static const char msg[] = "fuzz replay: crashed on input ";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    ignored = write(2, current.c_str(), current.size());
    ignored = write(2, "\n", 1);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::vector<uint8_t> load(const std::string& path) {
    if (ends_with(path, ".hex")) return gwhex::read(path);
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int run(const std::string& path, int* count) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return 1;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR* d = opendir(path.c_str());
        if (!d) return 1;
        std::vector<std::string> names;
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') names.push_back(path + "/" + e->d_name);
        closedir(d);
        int failed = 0;
        for (const auto& n : names) failed += run(n, count);
        return failed;
    }
    const auto data = load(path);
    current = path;
    LLVMFuzzerTestOneInput(data.data(), data.size());
    ++*count;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, on_fatal);
    int count = 0, failed = 0;
    for (int i = 1; i < argc; ++i) failed += run(argv[i], &count);
    std::printf("replayed %d inputs\n", count);
    return failed ? 1 : 0;
}
