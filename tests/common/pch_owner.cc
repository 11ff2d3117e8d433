// The target that owns the tests' precompiled headers (tests/common/CMakeLists.txt).
int main() { return 0; }
