/// One CBOR data item from the subset CTAP2 uses (RFC 8949, CTAP 2.1 §8 "Message Encoding").
///
/// Integers keep their wire sign split so the full range of major types 0 and 1 survives a round
/// trip: `.negative(n)` is the value `-1 - n`. Maps are unordered here; the encoder writes them in
/// CTAP2 canonical order and the decoder refuses any other order, so no information is lost.
/// Floats are accepted when decoding and written in their shortest lossless width; two floats are equal when
/// their bits are (so NaN equals NaN and -0.0 differs from 0.0, as they differ on the wire).
public enum CBORValue: Sendable {
    /// Major type 0: an unsigned integer.
    case unsigned(UInt64)
    /// Major type 1: the integer `-1 - n`.
    case negative(UInt64)
    /// Major type 2: a byte string.
    case bytes([UInt8])
    /// Major type 3: a UTF-8 text string.
    case text(String)
    /// Major type 4: an array.
    case array([CBORValue])
    /// Major type 5: a map with unique keys.
    case map([CBORValue: CBORValue])
    /// Simple values 20 and 21.
    case bool(Bool)
    /// Simple value 22.
    case null
    /// Major type 7 floating point (half, single or double precision on the wire).
    case float(Double)
}

extension CBORValue {
    /// A signed integer as whichever of `.unsigned` or `.negative` the wire would use.
    public static func int<I: BinaryInteger>(_ value: I) -> CBORValue {
        if value >= 0 { return .unsigned(UInt64(value)) }
        return .negative(UInt64(-1 - Int64(value)))
    }

    /// The value as a Swift `Int`, when it is an integer that fits.
    public var intValue: Int? {
        switch self {
        case .unsigned(let n): return n <= UInt64(Int.max) ? Int(n) : nil
        case .negative(let n): return n <= UInt64(Int.max) ? -1 - Int(n) : nil
        default: return nil
        }
    }

    /// The contents of a byte string.
    public var bytesValue: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    /// The contents of a text string.
    public var textValue: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    /// The elements of an array.
    public var arrayValue: [CBORValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The entries of a map.
    public var mapValue: [CBORValue: CBORValue]? {
        if case .map(let entries) = self { return entries }
        return nil
    }

    /// The value of `true` or `false`.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// A short name for the item's type, for error messages.
    public var typeName: String {
        switch self {
        case .unsigned, .negative: "integer"
        case .bytes: "byte string"
        case .text: "text string"
        case .array: "array"
        case .map: "map"
        case .bool: "boolean"
        case .null: "null"
        case .float: "float"
        }
    }
}

extension CBORValue: Hashable {
    /// Structural equality, with floats compared by their bits: `Double`'s own `==` would make a NaN unequal to
    /// itself, so a map with a NaN key could hold that key twice and a decoded value would not equal itself.
    public static func == (lhs: CBORValue, rhs: CBORValue) -> Bool {
        switch (lhs, rhs) {
        case (.unsigned(let a), .unsigned(let b)), (.negative(let a), .negative(let b)): a == b
        case (.bytes(let a), .bytes(let b)): a == b
        case (.text(let a), .text(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.map(let a), .map(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        case (.float(let a), .float(let b)): a.bitPattern == b.bitPattern
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .unsigned(let value): hasher.combine(0 as UInt8); hasher.combine(value)
        case .negative(let value): hasher.combine(1 as UInt8); hasher.combine(value)
        case .bytes(let value): hasher.combine(2 as UInt8); hasher.combine(value)
        case .text(let value): hasher.combine(3 as UInt8); hasher.combine(value)
        case .array(let value): hasher.combine(4 as UInt8); hasher.combine(value)
        case .map(let value): hasher.combine(5 as UInt8); hasher.combine(value)
        case .bool(let value): hasher.combine(6 as UInt8); hasher.combine(value)
        case .null: hasher.combine(7 as UInt8)
        case .float(let value): hasher.combine(8 as UInt8); hasher.combine(value.bitPattern)
        }
    }
}

extension CBORValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .int(value) }
}

extension CBORValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
}

extension CBORValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension CBORValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: CBORValue...) { self = .array(elements) }
}

extension CBORValue: ExpressibleByDictionaryLiteral {
    /// Builds a map; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (CBORValue, CBORValue)...) {
        self = .map(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
