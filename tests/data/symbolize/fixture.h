#ifdef __cplusplus
extern "C" {
#endif
int util_mix(int a, int b);
int util_small(int a);
int cxx_entry(int n);
#ifdef __cplusplus
}
#endif
