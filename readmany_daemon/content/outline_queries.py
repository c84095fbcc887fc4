"""The outline queries: which syntax nodes are symbols, per language (tree-sitter queries).

The one concept here is the table :data:`QUERIES`, language name → the text of a
tree-sitter query (the ``.scm`` S-expression language of tags queries) that
:mod:`readmany_daemon.content.outline` compiles once per language. Nothing here imports
tree-sitter: these are strings.

Capture names, the contract with the outline module:

* ``@<kind>`` on the whole definition node: its range gives ``lineStart``/``lineEnd`` and
  its nesting gives ``depth``. ``<kind>`` is a lower-case LSP SymbolKind name: ``class``,
  ``function``, ``method``, ``module``, ``namespace``, ``interface``, ``enum``,
  ``constant``, ``variable``. A ``function`` whose nearest enclosing symbol is a
  ``class`` or ``interface`` becomes a ``method`` (so the queries need not know where a
  function sits).
* ``@name``: the node whose text is the symbol's name.
* ``@receiver`` (Go): the receiver type, shown as ``(*T).Name`` as gopls shows it.
* ``@trait`` (Rust): an impl's trait, shown as ``impl Trait for Type``; an impl without
  one is ``impl Type``.

One predicate: ``(#name-match? @name "REGEX")``, the captured name matching a regular
expression (Python's ``re``, searched in the name's UTF-8 bytes), which the outline
module evaluates itself on the parsed bytes. tree-sitter's own ``#match?`` fetches the
node's text through the parse's read callback, which costs the whole text per match
on a text parsed in chunks (40,000 constants: 11 s instead of 0.2 s).

Why our own queries rather than the ``queries/tags.scm`` the grammar wheels ship: those
serve code navigation, not outlines. They capture references and doc comments, disagree
between languages (C's captures the declarator, not the definition, and so matches
prototypes; TypeScript's holds only what JavaScript's lacks; Bash ships none), and have
no constants. The patterns below started from them.

Where a language has a construct that is not in the kinds above, the nearest is used:
structs, unions and Rust impl blocks are ``class``; Rust traits and TypeScript type
aliases are ``interface``; Go named types other than interfaces are ``class`` (methods
attach to them). ``constant`` is a module-level UPPER_CASE assignment in Python,
JavaScript and TypeScript; ``const`` in Go and Rust (and ``static`` in Rust); a
``static final`` UPPER_CASE field in Java; an object-like ``#define`` in C and C++; a
top-level constant assignment in Ruby.
"""

from __future__ import annotations

from typing import Final

__all__ = ["QUERIES"]

_UPPER: Final = '"^_*[A-Z][A-Z0-9_]*$"'

_PYTHON: Final = f"""
(class_definition name: (identifier) @name) @class
(function_definition name: (identifier) @name) @function
(module (expression_statement (assignment left: (identifier) @name) @constant)
  (#name-match? @name {_UPPER}))
"""

#: JavaScript; also the start of TypeScript's (the TypeScript grammars extend it).
_JS_COMMON: Final = f"""
[(class_declaration name: (_) @name) (class name: (_) @name)] @class
[(function_declaration name: (identifier) @name)
 (generator_function_declaration name: (identifier) @name)] @function
(method_definition name: (_) @name) @method
(variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @function
(program (lexical_declaration
  (variable_declarator name: (identifier) @name
    value: [(number) (string) (template_string) (true) (false) (null) (unary_expression)
            (binary_expression) (array) (object) (regex) (new_expression)
            (call_expression) (member_expression)]) @constant)
  (#name-match? @name {_UPPER}))
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @name
    value: [(number) (string) (template_string) (true) (false) (null) (unary_expression)
            (binary_expression) (array) (object) (regex) (new_expression)
            (call_expression) (member_expression)]) @constant))
  (#name-match? @name {_UPPER}))
"""

_TYPESCRIPT: Final = (
    _JS_COMMON
    + """
(abstract_class_declaration name: (type_identifier) @name) @class
(interface_declaration name: (type_identifier) @name) @interface
(type_alias_declaration name: (type_identifier) @name) @interface
(enum_declaration name: (identifier) @name) @enum
(internal_module name: (_) @name) @namespace
(module name: (_) @name) @module
(function_signature name: (identifier) @name) @function
(abstract_method_signature name: (_) @name) @method
"""
)

_GO: Final = """
(function_declaration name: (identifier) @name) @function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: (_) @receiver))
  name: (field_identifier) @name) @method
(type_declaration (type_spec name: (type_identifier) @name type: (interface_type)) @interface)
(type_declaration (type_spec name: (type_identifier) @name
  type: [(struct_type) (type_identifier) (qualified_type) (pointer_type) (slice_type)
         (array_type) (map_type) (channel_type) (function_type) (generic_type)]) @class)
(source_file (const_declaration (const_spec name: (identifier) @name) @constant))
"""

_RUST: Final = """
[(struct_item name: (type_identifier) @name) (union_item name: (type_identifier) @name)] @class
(enum_item name: (type_identifier) @name) @enum
(trait_item name: (type_identifier) @name) @interface
(impl_item trait: (_)? @trait type: (_) @name) @class
(function_item name: (identifier) @name) @function
(function_signature_item name: (identifier) @name) @function
(mod_item name: (identifier) @name) @module
[(const_item name: (identifier) @name) (static_item name: (identifier) @name)] @constant
(macro_definition name: (identifier) @name) @function
"""

_JAVA: Final = f"""
[(class_declaration name: (identifier) @name) (record_declaration name: (identifier) @name)]
  @class
[(interface_declaration name: (identifier) @name)
 (annotation_type_declaration name: (identifier) @name)] @interface
(enum_declaration name: (identifier) @name) @enum
[(method_declaration name: (identifier) @name)
 (constructor_declaration name: (identifier) @name)] @method
(field_declaration (modifiers "static" "final")
  declarator: (variable_declarator name: (identifier) @name) @constant
  (#name-match? @name {_UPPER}))
"""

#: C; also the start of C++'s.
_C: Final = """
(function_definition declarator: (_) @name) @function
[(struct_specifier name: (type_identifier) @name body: (_))
 (union_specifier name: (type_identifier) @name body: (_))] @class
(enum_specifier name: (type_identifier) @name body: (_)) @enum
(type_definition type: [(struct_specifier !name) (union_specifier !name)]
  declarator: (type_identifier) @name) @class
(type_definition type: (enum_specifier !name) declarator: (type_identifier) @name) @enum
(preproc_def name: (identifier) @name) @constant
"""

_CPP: Final = (
    _C
    + """
(class_specifier name: (_) @name body: (_)) @class
(namespace_definition name: (_) @name) @namespace
(field_declaration_list [(field_declaration declarator: (function_declarator) @name)
                         (declaration declarator: (function_declarator) @name)] @method)
"""
)

_RUBY: Final = """
(class name: (_) @name) @class
(singleton_class value: (_) @name) @class
(module name: (_) @name) @module
(method name: (_) @name) @method
(singleton_method object: (_) @receiver name: (_) @name) @method
(program (assignment left: (constant) @name) @constant)
"""

_BASH: Final = """
(function_definition name: (word) @name) @function
"""

#: Language name → its query. Markdown has none: its headings come from the section tree.
QUERIES: Final[dict[str, str]] = {
    "python": _PYTHON,
    "javascript": _JS_COMMON,
    "typescript": _TYPESCRIPT,
    "tsx": _TYPESCRIPT,
    "go": _GO,
    "rust": _RUST,
    "java": _JAVA,
    "c": _C,
    "cpp": _CPP,
    "ruby": _RUBY,
    "bash": _BASH,
}

#: The syntax node kinds that name something, per language (leaves of the tree): a
#: file's references are its nodes of these kinds (:func:`~readmany_daemon.content.
#: outline.tags`), as Aider's repo map takes ``name.reference.*`` tags. Kinds a grammar
#: lacks are skipped when the query is made.
REFERENCE_KINDS: Final = (
    "identifier",
    "type_identifier",
    "field_identifier",
    "property_identifier",
    "shorthand_property_identifier",
    "constant",
)
