"""BaguaTensor: a tensor an algorithm communicates, as a proxy (usually a
parameter) plus closures that read and replace the effective tensor (its
gradient, an optimizer state, the weight itself), as the original's
`ensure_bagua_tensor(name, getter_closure, setter_closure)` described."""


class BaguaTensor:
    def __init__(self, name, proxy, getter, setter):
        self.bagua_tensor_name = name
        self.proxy = proxy
        self._getter = getter
        self._setter = setter

    def bagua_getter_closure(self):
        """The tensor to communicate now."""
        return self._getter(self.proxy)

    def bagua_setter_closure(self, tensor):
        """Replaces the effective tensor with `tensor`."""
        self._setter(self.proxy, tensor)

    def __repr__(self):
        return f"BaguaTensor({self.bagua_tensor_name}, {tuple(self.proxy.shape)})"
