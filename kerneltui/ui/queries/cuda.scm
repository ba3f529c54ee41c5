; Highlights for CUDA C++ (tree-sitter-cuda, which extends the C++ and C grammars), using the
; capture names of Textual's TextArea themes.

(comment) @comment

[
  (string_literal)
  (raw_string_literal)
  (char_literal)
  (system_lib_string)
] @string

(number_literal) @number
[(true) (false)] @boolean
(null) @constant.builtin
(this) @variable.builtin

[
  (primitive_type)
  (sized_type_specifier)
  (auto)
] @type.builtin
(type_identifier) @type
(namespace_identifier) @type

(function_declarator declarator: (identifier) @function)
(function_declarator declarator: (field_identifier) @function)
(function_declarator declarator: (qualified_identifier name: (identifier) @function))
(call_expression function: (identifier) @function.call)
(call_expression function: (field_expression field: (field_identifier) @method.call))
(call_expression function: (qualified_identifier name: (identifier) @function.call))
(template_function name: (identifier) @function.call)

[
  "#include" "#define" "#if" "#ifdef" "#ifndef" "#else" "#elif" "#endif" (preproc_directive)
] @include

["if" "else" "switch" "case" "default"] @conditional
["for" "while" "do"] @repeat
["return"] @keyword.return
["break" "continue" "goto"] @keyword

[
  "const" "constexpr" "static" "extern" "inline" "volatile" "struct" "class" "enum" "union" "typedef"
  "template" "typename" "namespace" "using" "sizeof" "new" "delete" "public" "private" "protected"
  "virtual" "operator" "noexcept" "friend" "mutable" "explicit" "restrict" "__restrict__"
  "__global__" "__device__" "__host__" "__shared__" "__constant__" "__managed__" "__forceinline__"
  "__noinline__" "__launch_bounds__"
] @keyword

["<<<" ">>>"] @punctuation.special

[
  "=" "+=" "-=" "*=" "/=" "%=" "&=" "|=" "^=" "<<=" ">>=" "+" "-" "*" "/" "%" "++" "--" "==" "!="
  "<" ">" "<=" ">=" "&&" "||" "!" "&" "|" "^" "~" "<<" ">>" "->" "::" "?"
] @operator

["(" ")" "[" "]" "{" "}"] @punctuation.bracket
["," ";" "." ":"] @punctuation.delimiter
