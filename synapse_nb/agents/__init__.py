"""Agent integrations: lifecycle hooks that make the per-turn memory loop a mechanism, not advice.

- :mod:`synapse_nb.agents.hooks`: ``synapse-nb hook EVENT``, the process an agent's hook runs (session start,
  every prompt, before compaction, after file edits, at the end of a session). It acts as the agent, never creates a
  vault and never breaks the user's prompt: any failure is exit 0, empty stdout and one line on stderr. The events
  and their inputs are in :mod:`synapse_nb.agents.events`, what each does on the vault in
  :mod:`synapse_nb.agents.handlers`.
- :mod:`synapse_nb.agents.claude_code`: ``synapse-nb agent install claude-code``, the merge of those hooks into
  Claude Code's settings files (and the MCP server into the project's ``.mcp.json``), with backup, dry run,
  status and uninstall.
- :mod:`synapse_nb.agents.sessions`: what a hook remembers between its runs for one session (edits since the last
  checkpoint, files changed since the last episode), in a small file beside the database.

Nothing is imported here: ``synapse-nb hook`` loads only the modules it needs.
"""
