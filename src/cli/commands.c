/*
 * The command table: every command's spec (cmd_<name>.c), in the order
 * `agentstack help` lists them. A command appears here only when it works
 * end to end; hidden ones (kept spellings, the demo's server) are callable
 * but not listed. docs/commands.md lists the same set, checked by
 * tests/e2e/test_cli_inventory.py.
 */
#include <string.h>

#include "cli/cli.h"

extern const struct cli_spec cmd_help_spec, cmd_version_spec, cmd_lock_spec, cmd_trust_spec,
    cmd_sign_spec, cmd_verify_spec, cmd_install_spec, cmd_apply_spec, cmd_diff_spec,
    cmd_instructions_spec, cmd_restore_spec, cmd_undo_spec, cmd_use_spec, cmd_session_spec,
    cmd_connect_spec, cmd_gateway_spec, cmd_audit_spec, cmd_run_spec, cmd_report_spec,
    cmd_runs_spec, cmd_kill_spec, cmd_mcp_spec, cmd_demo_server_spec, cmd_doctor_spec,
    cmd_guard_spec, cmd_policy_spec, cmd_lib_spec, cmd_add_spec, cmd_upgrade_spec, cmd_remove_spec,
    cmd_search_spec, cmd_up_spec, cmd_secret_spec, cmd_init_spec, cmd_bootstrap_spec,
    cmd_adopt_spec, cmd_status_spec, cmd_self_spec, cmd_explain_spec, cmd_why_spec,
    cmd_toolset_spec, cmd_more_spec, cmd_x_spec, cmd_lease_spec, cmd_adapters_spec,
    cmd_settings_spec, cmd_delivery_spec, cmd_completions_spec, cmd_uninstall_spec,
    cmd_unrender_spec, cmd_yes_spec, cmd_export_spec, cmd_import_spec, cmd_auth_spec;

/* Three names a row, also when the count is not a multiple of three. */
/* clang-format off */
const struct cli_spec *const cli_commands[] = {
    &cmd_help_spec,         &cmd_version_spec,     &cmd_lock_spec,
    &cmd_trust_spec,        &cmd_yes_spec,         &cmd_export_spec,
    &cmd_import_spec,       &cmd_sign_spec,        &cmd_verify_spec,
    &cmd_install_spec,      &cmd_apply_spec,       &cmd_diff_spec,
    &cmd_instructions_spec, &cmd_restore_spec,     &cmd_undo_spec,
    &cmd_use_spec,          &cmd_session_spec,     &cmd_connect_spec,
    &cmd_gateway_spec,      &cmd_audit_spec,       &cmd_run_spec,
    &cmd_report_spec,       &cmd_runs_spec,        &cmd_kill_spec,
    &cmd_mcp_spec,          &cmd_demo_server_spec, &cmd_doctor_spec,
    &cmd_guard_spec,        &cmd_policy_spec,      &cmd_lib_spec,
    &cmd_add_spec,          &cmd_upgrade_spec,     &cmd_remove_spec,
    &cmd_search_spec,       &cmd_up_spec,          &cmd_secret_spec,
    &cmd_init_spec,         &cmd_bootstrap_spec,   &cmd_adopt_spec,
    &cmd_status_spec,       &cmd_self_spec,        &cmd_explain_spec,
    &cmd_why_spec,          &cmd_toolset_spec,     &cmd_lease_spec,
    &cmd_adapters_spec,     &cmd_settings_spec,    &cmd_delivery_spec,
    &cmd_completions_spec,  &cmd_uninstall_spec,   &cmd_unrender_spec,
    &cmd_more_spec,         &cmd_x_spec,           &cmd_auth_spec,
    NULL,
};
/* clang-format on */

const struct cli_spec *cli_find(const char *name)
{
    for (const struct cli_spec *const *c = cli_commands; *c; c++)
        if (strcmp((*c)->name, name) == 0)
            return *c;
    return NULL;
}
