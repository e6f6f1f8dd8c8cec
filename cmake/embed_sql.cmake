# Writes a C file with the SQL migrations as string literals, in file order.
#   cmake -DOUT=... -DDIR=... [-DVAR=bl_pg_migrations] -P embed_sql.cmake
# VAR names the array (bl_migrations, SQLite's, by default).
if(NOT VAR)
  set(VAR bl_migrations)
endif()
file(GLOB files ${DIR}/[0-9][0-9][0-9][0-9]_*.sql)
list(SORT files)
# A migration's version is its position (PRAGMA user_version, store/db.c):
# the number in each file's name must be that position, so a gap or a
# duplicate (two branches both adding 0003) fails the build instead of
# re-running a migration on an existing database.
set(pos 0)
foreach(f ${files})
  math(EXPR pos "${pos} + 1")
  get_filename_component(base ${f} NAME)
  string(SUBSTRING "${base}" 0 4 num)
  math(EXPR num "${num}")
  if(NOT num EQUAL pos)
    message(FATAL_ERROR "schema/migrations: ${base} is migration ${pos}; its number must be ${pos} (no gaps, no duplicates)")
  endif()
endforeach()
set(body "/* Generated from ${DIR} by cmake/embed_sql.cmake. */\n#include <stddef.h>\nconst char *const ${VAR}[] = {\n")
foreach(f ${files})
  file(READ ${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" esc "${hex}")
  string(LENGTH "${esc}" n)
  set(body "${body}    /* ${f} */\n")
  set(i 0)
  while(i LESS n)
    string(SUBSTRING "${esc}" ${i} 400 chunk)
    set(body "${body}    \"${chunk}\"\n")
    math(EXPR i "${i} + 400")
  endwhile()
  set(body "${body}    ,\n")
endforeach()
set(body "${body}    NULL\n};\n")
file(WRITE ${OUT}.tmp "${body}")
configure_file(${OUT}.tmp ${OUT} COPYONLY)
