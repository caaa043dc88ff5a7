/* The JSON files the voltgate program writes (bench, replay), each in one
 * piece: a reader never sees half a file, whatever kills the program. */
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "tools.h"

int tool_write_json(const char *path, const char *text)
{
    size_t len = strlen(text);
    char *line = malloc(len + 1);
    if (!line)
        return 0;
    memcpy(line, text, len);
    line[len] = '\n';
    vg_status st = vg_write_file_atomic(path, path, line, len + 1, NULL);
    free(line);
    return st == VG_OK;
}
