"""A griffe extension for the documentation site: an adapter's reference is its constructor
and its docstring.

- The constructor: `Adapter.__init_subclass__` makes every subclass a frozen dataclass at
  run time, which griffe (reading the source) does not see, so the class showed no
  parameters. This marks each subclass as `@dataclass`, and griffe's dataclass support then
  gives it the `__init__` Python makes: the fields, with their types and defaults, in order,
  keyword-only after `KW_ONLY`.
- No methods: an adapter's methods are `Adapter`'s contract (`forward`, `backward`, ...,
  documented on `Adapter`'s page) or its family's helpers (`slopes`, `sizes`, `problem`);
  both are left out of its entry. `Adapter` itself is untouched.
"""

import griffe

ADAPTER = "jaxbridge._adapter.Adapter"


def _is_adapter(cls: griffe.Class) -> bool:
    try:
        return any(base.path == ADAPTER for base in cls.mro())
    except ValueError:  # a base griffe cannot resolve (outside the package): not an adapter
        return False


def _classes(obj: griffe.Object):
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_class:
            yield member
        if member.is_module or member.is_class:
            yield from _classes(member)


class AdapterReference(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: object) -> None:
        # runs before griffe's own dataclass extension, which synthesises `__init__` from the
        # decorator this adds (griffe appends its built-in extensions after the configured ones)
        for cls in _classes(pkg):
            if cls.path == ADAPTER or not _is_adapter(cls):
                continue
            cls.labels.add("dataclass")  # griffe labels only a dataclass's subclasses
            cls.decorators.append(
                griffe.Decorator(
                    griffe.ExprName("dataclass", parent="dataclasses"), lineno=None, endlineno=None
                )
            )
            for name, member in list(cls.members.items()):
                if not name.startswith("_") and (member.is_function or "property" in member.labels):
                    cls.del_member(name)
