/// The cross-device (hybrid, caBLE v2) protocol as pure functions and state machines: no sockets,
/// no Bluetooth, no clocks and no hidden randomness. See Docs/Hybrid.md.
public enum Hybrid {}
