#!/bin/sh
# build_grpc_cli.sh PREFIX — builds grpc_cli, gRPC's command-line client,
# which Debian does not package, into PREFIX/grpc_cli: the tool's own sources
# (test/cpp/util/ of Debian's grpc source package, the version of the
# installed libgrpc++-dev) compiled against Debian's libgrpc++, protobuf and
# abseil; the whole source package is never built. Fetches the source with
# apt-get source through a private list directory (the system's apt
# configuration is left alone). Does nothing when PREFIX/grpc_cli exists.
set -eu
PREFIX=${1:?usage: build_grpc_cli.sh PREFIX}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ -x "$PREFIX/grpc_cli" ] && exit 0
mkdir -p "$PREFIX/apt/lists/partial" "$PREFIX/obj" "$PREFIX/gen"
cd "$PREFIX"
version=$(dpkg-query -W -f='${source:Version}' libgrpc++-dev)
echo "deb-src $MIRROR bookworm main" >apt/sources.list
set -- -o Dir::Etc::SourceList="$PWD/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
    -o Dir::State::Lists="$PWD/apt/lists" -o Dir::Cache="$PWD/apt/cache" -o APT::Sandbox::User=root
apt-get "$@" update -qq
apt-get "$@" source --download-only -qq "grpc=$version"
rm -rf src && mkdir src && tar -xzf grpc_*.orig.tar.gz -C src --strip-components 1
cd src
protoc -I. --cpp_out=../gen --grpc_out=../gen --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin \
    src/proto/grpc/reflection/v1alpha/reflection.proto
for f in test/cpp/util/grpc_cli.cc test/cpp/util/cli_call.cc test/cpp/util/cli_credentials.cc \
    test/cpp/util/grpc_tool.cc test/cpp/util/proto_file_parser.cc \
    test/cpp/util/proto_reflection_descriptor_database.cc test/cpp/util/service_describer.cc \
    test/cpp/util/test_config_cc.cc ../gen/src/proto/grpc/reflection/v1alpha/reflection.pb.cc \
    ../gen/src/proto/grpc/reflection/v1alpha/reflection.grpc.pb.cc; do
    echo "$f"
done | xargs -P "$(nproc)" -I{} sh -c \
    'g++ -std=c++17 -O1 -w -I. -I../gen -Iinclude -c {} -o ../obj/$(basename {} .cc).o'
absl=$(ls "/usr/lib/$(gcc -print-multiarch)"/libabsl_*.so | sed 's|.*/lib\(absl_[a-z0-9_]*\)\.so$|-l\1|')
# shellcheck disable=SC2046,SC2086
g++ -o ../grpc_cli.tmp ../obj/*.o $(pkg-config --libs grpc++ protobuf) -lprotoc -lgrpc -lgpr \
    -Wl,--start-group $absl -Wl,--end-group
mv ../grpc_cli.tmp ../grpc_cli
