// A real cubin / fatbin for the image checks of the GPU pass (tests/gpu/run.sh compiles it
// with nvcc on the device): ordo must load it and refuse every truncation of it.
extern "C" __global__ void empty() {}
