/*
 * libFuzzer target: one line from an MCP client or upstream server. Parsing
 * must never crash or leak; invalid input yields an error reply, never a
 * half-built message.
 */
#include <stddef.h>
#include <stdint.h>

#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mcp_msg m = {0};
    json_t *reply = NULL;
    (void)mcp_parse((const char *)data, size, &m, &reply);
    mcp_msg_clear(&m);
    json_decref(reply);
    return 0;
}
