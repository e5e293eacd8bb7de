/// One D-Bus value with its type: what a message's body is made of, written and read by `DBusConnection`.
///
/// Arrays carry their element signature, so that an empty array still has a type; a dictionary is an array of
/// `dictionaryEntry` values (`a{sv}` is `.array(elementSignature: "{sv}", …)`), as on the wire. The static helpers
/// build the common shapes: `.strings`, `.bytes`, `.variantDictionary`.
public indirect enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// An array; `elementSignature` is one complete type (`s`, `{sv}`, `ay`…).
    case array(elementSignature: String, [DBusValue])
    /// One entry of a dictionary: only inside an array.
    case dictionaryEntry(key: DBusValue, value: DBusValue)
    case variant(DBusValue)
    case structure([DBusValue])

    /// The value's type signature: `s`, `as`, `a{sv}`, `(ii)`…
    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .array(let element, _): "a" + element
        case .dictionaryEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .variant: "v"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// An array of strings (`as`).
    public static func strings(_ values: [String]) -> DBusValue {
        .array(elementSignature: "s", values.map(DBusValue.string))
    }

    /// A byte array (`ay`).
    public static func bytes(_ values: [UInt8]) -> DBusValue {
        .array(elementSignature: "y", values.map(DBusValue.byte))
    }

    /// A dictionary of variants keyed by strings (`a{sv}`), in the keys' order, so that the same dictionary is
    /// always the same message.
    public static func variantDictionary(_ entries: [String: DBusValue]) -> DBusValue {
        .array(
            elementSignature: "{sv}",
            entries.sorted { $0.key < $1.key }.map { .dictionaryEntry(key: .string($0.key), value: .variant($0.value)) }
        )
    }

    /// A dictionary of strings keyed by strings (`a{ss}`), in the keys' order.
    public static func stringDictionary(_ entries: [String: String]) -> DBusValue {
        .array(
            elementSignature: "{ss}",
            entries.sorted { $0.key < $1.key }.map { .dictionaryEntry(key: .string($0.key), value: .string($0.value)) })
    }

    // MARK: Reading

    /// The value inside a variant, or the value itself.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var stringValue: String? {
        switch unwrapped {
        case .string(let text), .objectPath(let text), .signature(let text): text
        default: nil
        }
    }

    public var boolValue: Bool? { if case .bool(let value) = unwrapped { value } else { nil } }
    public var byteValue: UInt8? { if case .byte(let value) = unwrapped { value } else { nil } }
    public var int32Value: Int32? { if case .int32(let value) = unwrapped { value } else { nil } }
    public var uint32Value: UInt32? { if case .uint32(let value) = unwrapped { value } else { nil } }
    public var int64Value: Int64? { if case .int64(let value) = unwrapped { value } else { nil } }
    public var uint64Value: UInt64? { if case .uint64(let value) = unwrapped { value } else { nil } }
    public var doubleValue: Double? { if case .double(let value) = unwrapped { value } else { nil } }

    /// The elements of an array.
    public var arrayValue: [DBusValue]? { if case .array(_, let values) = unwrapped { values } else { nil } }

    /// An array of strings.
    public var stringsValue: [String]? {
        guard let values = arrayValue else { return nil }
        let strings = values.compactMap(\.stringValue)
        return strings.count == values.count ? strings : nil
    }

    /// A byte array.
    public var bytesValue: [UInt8]? {
        guard let values = arrayValue else { return nil }
        let bytes = values.compactMap(\.byteValue)
        return bytes.count == values.count ? bytes : nil
    }

    /// A dictionary keyed by strings (`a{sv}`, `a{ss}`…), variants unwrapped; a repeated key keeps its last value.
    public var dictionaryValue: [String: DBusValue]? {
        guard let values = arrayValue else { return nil }
        var dictionary: [String: DBusValue] = [:]
        for value in values {
            guard case .dictionaryEntry(let key, let entry) = value, let name = key.stringValue else { return nil }
            dictionary[name] = entry.unwrapped
        }
        return dictionary
    }
}

/// A message's body read in order, each argument as the type asked for: `try reader.next(UInt32.self)`.
public struct DBusArguments: Sendable {
    public let values: [DBusValue]
    private var index = 0

    public init(_ values: [DBusValue]) { self.values = values }

    /// The next argument as `type`; throws when there is none or it has another type.
    public mutating func next<Value: DBusDecodable>(_ type: Value.Type = Value.self) throws(DBusError) -> Value {
        guard index < values.count else {
            throw DBusError.unexpectedReply("it has \(values.count) arguments, \(index + 1) were read")
        }
        let value = values[index]
        guard let decoded = Value(dbusValue: value) else {
            throw DBusError.unexpectedReply("argument \(index + 1) is \(value.signature), not \(Value.dbusSignature)")
        }
        index += 1
        return decoded
    }
}

/// A Swift type read from one D-Bus argument.
public protocol DBusDecodable: Sendable {
    /// The signature it is read from, for messages.
    static var dbusSignature: String { get }
    init?(dbusValue: DBusValue)
}

extension String: DBusDecodable {
    public static var dbusSignature: String { "s" }
    public init?(dbusValue: DBusValue) {
        guard let text = dbusValue.stringValue else { return nil }
        self = text
    }
}

extension Bool: DBusDecodable {
    public static var dbusSignature: String { "b" }
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.boolValue else { return nil }
        self = value
    }
}

extension UInt8: DBusDecodable {
    public static var dbusSignature: String { "y" }
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.byteValue else { return nil }
        self = value
    }
}

extension Int32: DBusDecodable {
    public static var dbusSignature: String { "i" }
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.int32Value else { return nil }
        self = value
    }
}

extension UInt32: DBusDecodable {
    public static var dbusSignature: String { "u" }
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.uint32Value else { return nil }
        self = value
    }
}

extension Int64: DBusDecodable {
    public static var dbusSignature: String { "x" }
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.int64Value else { return nil }
        self = value
    }
}

extension UInt64: DBusDecodable {
    public static var dbusSignature: String { "t" }
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.uint64Value else { return nil }
        self = value
    }
}

extension Double: DBusDecodable {
    public static var dbusSignature: String { "d" }
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.doubleValue else { return nil }
        self = value
    }
}

extension DBusValue: DBusDecodable {
    public static var dbusSignature: String { "any type" }
    public init?(dbusValue: DBusValue) { self = dbusValue }
}

/// An array of decodable elements: `as` as `[String]`, `ay` as `[UInt8]`…
extension Array: DBusDecodable where Element: DBusDecodable {
    public static var dbusSignature: String { "a" + Element.dbusSignature }
    public init?(dbusValue: DBusValue) {
        guard let values = dbusValue.arrayValue else { return nil }
        let elements = values.compactMap(Element.init(dbusValue:))
        guard elements.count == values.count else { return nil }
        self = elements
    }
}

extension [String: DBusValue]: DBusDecodable {
    public static var dbusSignature: String { "a{sv}" }
    public init?(dbusValue: DBusValue) {
        guard let dictionary = dbusValue.dictionaryValue else { return nil }
        self = dictionary
    }
}
