/* A shared object without the thpemu_policy symbol (plugin.sh: refused, exit 2 / fallback). */
int thpemu_policy_typo = 1;
