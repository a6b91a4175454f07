# tokentap - see README.md. `make` builds build/tokentap; `make test` runs
# every test (plain, then ASan+UBSan, then short fuzz runs); `make demo`
# runs the main job on an embedded default; `make bench` measures.

BUILD    ?= build
CC       ?= cc
SAN      ?=
# OpenSSL, libmicrohttpd and libcapstone are compiled against but not
# linked: the features that use them (serve --tls, watch --metrics, Go TLS
# uprobes) load them on first use (userspace/core/lazy_lib.h), so that every
# other command starts without mapping them.
PKGS     := libpcap libcjson zlib libnghttp2
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) openssl libmicrohttpd 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lpcap -lcjson -lz -lnghttp2)

WARN     := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
OPT      ?= -O2 -g
# The project's own flags live in TT_CFLAGS so that a CFLAGS given on the
# command line adds to them instead of replacing them.
TT_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -Iuserspace $(PKG_CFLAGS) -MMD -MP $(OPT)
LDLIBS   := $(PKG_LIBS) -lbpf -lelf -lz -lm -ldl -pthread
# gcc's generic x86-64 tuning writes a struct copy or memset of 32 bytes to
# 8 KiB inline as `rep movsq` / `rep stosq`, which take tens of cycles to
# start on the cores the bench runs on: two of them per token event (a
# classified event's copy, the SSE parser's reset) were 9 % of analyze
# (docs/performance.md). Unrolled moves up to 256 bytes, libc's memcpy and
# memset (picked for the CPU at load time) above; compilers without these
# options (clang, other targets) build as before.
STRINGOP := -mmemcpy-strategy=unrolled_loop:256:noalign,libcall:-1:noalign \
            -mmemset-strategy=unrolled_loop:256:noalign,libcall:-1:noalign
ifneq ($(shell $(CC) $(STRINGOP) -Werror -E -x c /dev/null -o /dev/null 2>/dev/null && echo ok),)
TT_CFLAGS += $(STRINGOP)
endif

# The eBPF vantage (bpf/README.md): vmlinux.h from this kernel's BTF, the
# CO-RE object, and its libbpf skeleton, all under $(BUILD)/bpf.
BPF_CLANG ?= clang
BPFTOOL   ?= bpftool
BPF_DIR   := $(BUILD)/bpf
BPF_ARCH  := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_SKEL  := $(BPF_DIR)/socktap.skel.h

ifeq ($(SAN),1)
TT_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
endif

LIB_SRC  := $(filter-out userspace/main.c,$(shell find userspace -name '*.c' | sort))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
MAIN_OBJ := $(BUILD)/obj/userspace/main.o
SUP_SRC  := $(shell find tests/support -name '*.c' 2>/dev/null | sort)
SUP_OBJ  := $(SUP_SRC:%.c=$(BUILD)/obj/%.o)
SUP_LIB  := $(BUILD)/libttsupport.a
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)
PROBE_SO := $(BUILD)/libtokentap-probe.so

.PHONY: all test unit-tests test-plain test-san fuzz fuzz-short demo demo-run bench bench-run clean deps check-one soak
all: $(BUILD)/tokentap $(TOOL_BIN) $(PROBE_SO)

$(BPF_DIR)/vmlinux.h:
	@mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror -I$(BPF_DIR)

$(BPF_DIR)/socktap.bpf.o: bpf/socktap.bpf.c $(wildcard bpf/*.bpf.h) bpf/socktap.h $(BPF_DIR)/vmlinux.h
	$(BPF_CLANG) $(BPF_CFLAGS) -Ibpf -c $< -o $@

# build/tools/ttbpffloor's programs that do nothing (tests/bench/bpf.sh: the floor)
$(BPF_DIR)/bpffloor.bpf.o: tests/tools/bpf/bpffloor.bpf.c $(BPF_DIR)/vmlinux.h
	$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@

# a BPF object's libbpf skeleton, named after it (socktap, bpffloor)
$(BPF_DIR)/%.skel.h: $(BPF_DIR)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@

$(BUILD)/tools/ttbpffloor: TT_CFLAGS += -DTT_WITH_BPF -I$(BPF_DIR)
$(BUILD)/tools/ttbpffloor: $(BPF_DIR)/bpffloor.skel.h

# the userspace files that load, attach or read the BPF object
BPF_USERS := $(addprefix $(BUILD)/obj/userspace/source/,bpf_source.o bpf_load.o bpf_setup.o bpf_tls_stream.o tls_attach.o tls_go.o)
$(BPF_USERS): TT_CFLAGS += -DTT_WITH_BPF -I$(BPF_DIR)
$(BPF_USERS): $(BPF_SKEL)

# The LD_PRELOAD probe (probe/README.md): never built with the sanitizers
# (an ASan library cannot be preloaded into an uninstrumented program), its
# own flags only, exporting only its hooks.
PROBE_SRCS := $(wildcard probe/*.c)
$(PROBE_SO): $(PROBE_SRCS) $(wildcard probe/*.h) probe/probe.map
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -D_GNU_SOURCE -O2 -g -fPIC -shared -fvisibility=hidden -fno-sanitize=all \
		-Wl,--version-script=probe/probe.map -Wl,-z,now -o $@ $(PROBE_SRCS) -ldl -pthread

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(TT_CFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/libtokentap.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# Test support as an archive: a program links only the parts it uses.
$(SUP_LIB): $(SUP_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tokentap: $(MAIN_OBJ) $(BUILD)/libtokentap.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(SUP_LIB) $(BUILD)/libtokentap.a
	@mkdir -p $(dir $@)
	$(CC) $(TT_CFLAGS) $(CFLAGS) -Itests/support $(LDFLAGS) -o $@ $< $(SUP_LIB) $(BUILD)/libtokentap.a $(LDLIBS) -lcmocka

$(BUILD)/tools/tttlsbench: LDLIBS += -lssl -lcrypto -lpthread

$(BUILD)/tools/%: tests/tools/%.c $(SUP_LIB) $(BUILD)/libtokentap.a
	@mkdir -p $(dir $@)
	$(CC) $(TT_CFLAGS) $(CFLAGS) -Itests/support $(LDFLAGS) -o $@ $< $(SUP_LIB) $(BUILD)/libtokentap.a $(LDLIBS)

unit-tests: $(TEST_BIN) $(BUILD)/tokentap $(TOOL_BIN) $(PROBE_SO)

# Run every unit test binary, then the end-to-end scripts, against BUILD.
test-plain: unit-tests
	@BUILD=$(BUILD) tests/run_unit.sh $(TEST_BIN)
	@BUILD=$(BUILD) tests/run_e2e.sh

# One unit test by name: make check-one TEST=sse
check-one: $(BUILD)/tests/test_$(TEST)
	$(BUILD)/tests/test_$(TEST)

test-san:
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	$(MAKE) BUILD=build/san SAN=1 OPT="-O1 -g" test-plain

fuzz-short:
	tests/fuzz/run.sh short

fuzz:
	tests/fuzz/run.sh long

# Sequential on purpose: each stage builds in parallel inside.
test: deps
	$(MAKE) test-plain
	$(MAKE) test-san
	$(MAKE) fuzz-short
	@echo "make test: all suites passed"

demo: deps
	@$(MAKE) --no-print-directory demo-run

demo-run: $(BUILD)/tokentap $(TOOL_BIN) $(PROBE_SO)
	@BUILD=$(BUILD) tests/demo.sh

bench: deps
	@$(MAKE) --no-print-directory bench-run

bench-run: $(BUILD)/tokentap $(TOOL_BIN) $(PROBE_SO)
	@BUILD=$(BUILD) tests/bench/run.sh

# The watcher held for 10 minutes under churn (tests/bench/soak.sh), plain
# and under ASan+UBSan, into docs/performance.md.
soak: deps $(BUILD)/tokentap $(TOOL_BIN)
	$(MAKE) BUILD=build/san SAN=1 OPT="-O1 -g" build/san/tokentap build/san/tools/ttload
	@BENCH_ONLY=soak BUILD=$(BUILD) tests/bench/run.sh

# Installs the Debian packages when any is missing (needs root then); quick otherwise.
deps:
	@tests/install_deps.sh

clean:
	rm -rf build

# make install [PREFIX=/usr/local] [DESTDIR=] [BUILD=build]: the binary and
# the probe library that $(BUILD) holds (never rebuilt here, so that
# `sudo make install` after `make` compiles nothing as root), the systemd
# unit with ExecStart on the installed binary, the docs (docs/production.md).
# make uninstall removes those files and the tokentap directories once empty.
PREFIX     ?= /usr/local
INST_BIN   := $(DESTDIR)$(PREFIX)/bin/tokentap
INST_PROBE := $(DESTDIR)$(PREFIX)/lib/tokentap/libtokentap-probe.so
INST_UNIT  := $(DESTDIR)$(PREFIX)/lib/systemd/system/tokentap-watch.service
INST_DOCS  := $(DESTDIR)$(PREFIX)/share/doc/tokentap
DOC_NAMES  := $(notdir $(wildcard docs/*.md))

.PHONY: install uninstall
install:
	@for f in $(BUILD)/tokentap $(PROBE_SO); do [ -f "$$f" ] || \
		{ echo "make install: $$f is not built: run make BUILD=$(BUILD) first" >&2; exit 1; }; done
	install -D -m 0755 $(BUILD)/tokentap "$(INST_BIN)"
	install -D -m 0644 $(PROBE_SO) "$(INST_PROBE)"
	sed -E '/^(ExecStart|Documentation)=/s|/usr/local/|$(PREFIX)/|' docs/deploy/tokentap-watch.service \
		| install -D -m 0644 /dev/stdin "$(INST_UNIT)"
	@grep -q '^ExecStart=$(PREFIX)/bin/tokentap ' "$(INST_UNIT)" || \
		{ echo "make install: the unit's ExecStart is not $(PREFIX)/bin/tokentap" >&2; exit 1; }
	install -D -m 0644 -t "$(INST_DOCS)" $(addprefix docs/,$(DOC_NAMES))

uninstall:
	rm -f "$(INST_BIN)" "$(INST_PROBE)" "$(INST_UNIT)" $(foreach d,$(DOC_NAMES),"$(INST_DOCS)/$(d)")
	@for d in "$(DESTDIR)$(PREFIX)/lib/tokentap" "$(INST_DOCS)"; do [ ! -d "$$d" ] || rmdir "$$d" 2>/dev/null || \
		echo "make uninstall: $$d is not empty: left in place" >&2; done

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
