/* placeholder: replaced by the real test */
#include <stdio.h>
int main(void)
{
    puts("0 passed, 0 failed");
    return 0;
}
