/// Writes CBOR item by item, for hot paths that know their output's shape: no intermediate
/// `CBORValue` tree, no dictionary, no sorting.
///
/// The caller writes map keys in CTAP2 canonical order itself (shorter encodings first, then bytewise:
/// small integer keys ascending, then text keys by length). Anything written this way must also pass
/// the strict decoder, which the tests of every caller check.
public struct CBORWriter {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// Starts with `prefix` (for example a CTAP status byte) and room for `capacity` bytes.
    public init(prefix: [UInt8] = [], capacity: Int = 128) {
        bytes = prefix
        bytes.reserveCapacity(capacity)
    }

    /// The head of a map with `count` entries; the entries follow as key, value, key, value…
    public mutating func mapHeader(count: Int) {
        CBORValue.appendHead(major: 5, argument: UInt64(count), to: &bytes)
    }

    /// The head of an array with `count` elements.
    public mutating func arrayHeader(count: Int) {
        CBORValue.appendHead(major: 4, argument: UInt64(count), to: &bytes)
    }

    public mutating func int(_ value: Int) {
        if value >= 0 {
            CBORValue.appendHead(major: 0, argument: UInt64(value), to: &bytes)
        } else {
            CBORValue.appendHead(major: 1, argument: UInt64(-1 - value), to: &bytes)
        }
    }

    public mutating func byteString(_ value: [UInt8]) {
        CBORValue.appendHead(major: 2, argument: UInt64(value.count), to: &bytes)
        bytes.append(contentsOf: value)
    }

    public mutating func text(_ value: String) {
        let utf8 = value.utf8
        CBORValue.appendHead(major: 3, argument: UInt64(utf8.count), to: &bytes)
        bytes.append(contentsOf: utf8)
    }

    public mutating func bool(_ value: Bool) {
        bytes.append(value ? 0xF5 : 0xF4)
    }

    /// Any value, canonically encoded.
    public mutating func value(_ value: CBORValue) {
        value.encode(into: &bytes)
    }
}
