package subagent

// CodeDefinitionInvalid refuses an agent definition: an agent file that does not parse,
// a definition that breaks a rule Validate checks, an agent file too large to read, or
// two files of one directory that define the same name.
const CodeDefinitionInvalid = "subagent.definition_invalid"

// CodeLoadFailed reports an agent directory or file Load could not read: an error of the
// env (a permission, a dangling link, a cancelled context), not of the file's content.
const CodeLoadFailed = "subagent.load_failed"

// CodeTypeUnknown refuses a subagent_type no definition of the catalog names.
const CodeTypeUnknown = "subagent.type_unknown"
