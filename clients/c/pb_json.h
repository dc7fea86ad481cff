/*
 * pb_json.h — any protobuf-c message as a json-c object, by walking its
 * descriptor: fields under their .proto names, enums as their value names,
 * maps as objects, oneofs as the member that is set, floats with 9
 * significant digits (enough to round-trip a float), a
 * google.protobuf.Duration as proto3 JSON writes it ("0.000512000s").
 */
#ifndef LMSCORE_CLI_PB_JSON_H
#define LMSCORE_CLI_PB_JSON_H

#include <stdio.h>

#include <json-c/json.h>
#include <protobuf-c/protobuf-c.h>

json_object *pb_to_json(const ProtobufCMessage *msg);

/* A float as a JSON number ("%.9g"), or null when it is not finite. */
json_object *pb_json_float(double value);

/* Prints a JSON object as "path: value" lines (nested keys joined with "."),
 * for human-readable output of the same data. */
void pb_json_print_flat(FILE *out, json_object *obj, const char *prefix);

#endif
