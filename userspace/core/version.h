#ifndef TT_VERSION_H
#define TT_VERSION_H
#define TT_VERSION "0.1.0"
#endif
