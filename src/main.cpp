#include "cli/cli.h"

int main(int argc, char** argv) { return infdoctor::cli::run(argc, argv); }
