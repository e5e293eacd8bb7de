import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// Writing `DBusValue`s into sd-bus messages and reading messages back out, on the bus thread only (sd-bus is not
/// thread-safe). Everything read is copied: no pointer into a message outlives it.
enum SDBusMessages {
    /// The type code `code` (`y`, `a`, `{`…) as the `char` sd-bus takes.
    static func code(_ character: Unicode.Scalar) -> CChar { CChar(bitPattern: UInt8(character.value)) }

    /// Appends `value` to `message`; 0 or a negative errno.
    static func append(_ value: DBusValue, to message: OpaquePointer) -> Int32 {
        func basic<T>(_ type: Unicode.Scalar, _ value: T) -> Int32 {
            var copy = value
            return withUnsafeMutableBytes(of: &copy) {
                sd_bus_message_append_basic(message, code(type), $0.baseAddress)
            }
        }
        func container(_ type: Unicode.Scalar, _ contents: String, _ values: [DBusValue]) -> Int32 {
            var result = sd_bus_message_open_container(message, code(type), contents)
            guard result >= 0 else { return result }
            for value in values {
                result = append(value, to: message)
                guard result >= 0 else { return result }
            }
            return sd_bus_message_close_container(message)
        }
        switch value {
        case .byte(let value): return basic("y", value)
        case .bool(let value): return basic("b", Int32(value ? 1 : 0))
        case .int16(let value): return basic("n", value)
        case .uint16(let value): return basic("q", value)
        case .int32(let value): return basic("i", value)
        case .uint32(let value): return basic("u", value)
        case .int64(let value): return basic("x", value)
        case .uint64(let value): return basic("t", value)
        case .double(let value): return basic("d", value)
        case .string(let text), .objectPath(let text), .signature(let text):
            // D-Bus strings hold no NUL; sd-bus would read only up to it.
            guard !text.utf8.contains(0) else { return -EINVAL }
            let type: Unicode.Scalar =
                if case .string = value { "s" } else if case .objectPath = value { "o" } else { "g" }
            return text.withCString { sd_bus_message_append_basic(message, code(type), $0) }
        case .array(let element, let values): return container("a", element, values)
        case .dictionaryEntry(let key, let value):
            return container("e", key.signature + value.signature, [key, value])
        case .variant(let inner): return container("v", inner.signature, [inner])
        case .structure(let fields): return container("r", fields.map(\.signature).joined(), fields)
        }
    }

    /// Appends every value; 0 or the first negative errno.
    static func append(_ values: [DBusValue], to message: OpaquePointer) -> Int32 {
        for value in values {
            let result = append(value, to: message)
            guard result >= 0 else { return result }
        }
        return 0
    }

    /// The whole of `message`, its body read from the start.
    static func read(_ message: OpaquePointer) throws(DBusError) -> DBusMessage {
        var type: UInt8 = 0
        _ = sd_bus_message_get_type(message, &type)
        // The header's type byte: 1 method call, 2 method return, 3 error, 4 signal.
        let kind: DBusMessage.Kind =
            switch type {
            case 1: .methodCall
            case 2: .methodReturn
            case 3: .error
            default: .signal
            }
        var cookie: UInt64 = 0
        _ = sd_bus_message_get_cookie(message, &cookie)
        let error = sd_bus_message_get_error(message)
        guard sd_bus_message_rewind(message, 1) >= 0 else { throw .unexpectedReply("the message cannot be read") }
        return DBusMessage(
            kind: kind, sender: text(sd_bus_message_get_sender(message)),
            destination: text(sd_bus_message_get_destination(message)), path: text(sd_bus_message_get_path(message)),
            interface: text(sd_bus_message_get_interface(message)), member: text(sd_bus_message_get_member(message)),
            errorName: text(error?.pointee.name), serial: cookie, body: try readValues(message))
    }

    private static func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }

    /// The values up to the end of the current container.
    private static func readValues(_ message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while true {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>? = nil
            let result = sd_bus_message_peek_type(message, &type, &contents)
            guard result >= 0 else { throw .unexpectedReply("the body cannot be read (\(errorText(result)))") }
            if result == 0 { return values }
            values.append(try readValue(message, type: UInt8(bitPattern: type), contents: contents))
        }
    }

    private static func readValue(
        _ message: OpaquePointer, type: UInt8, contents: UnsafePointer<CChar>?
    ) throws(DBusError) -> DBusValue {
        func basic<T>(_ initial: T) throws(DBusError) -> T {
            var value = initial
            let result = withUnsafeMutableBytes(of: &value) {
                sd_bus_message_read_basic(message, CChar(bitPattern: type), $0.baseAddress)
            }
            guard result > 0 else { throw .unexpectedReply("a value cannot be read (\(errorText(result)))") }
            return value
        }
        func inside(_ container: UInt8) throws(DBusError) -> [DBusValue] {
            guard sd_bus_message_enter_container(message, CChar(bitPattern: container), contents) > 0 else {
                throw .unexpectedReply("a container cannot be read")
            }
            let values = try readValues(message)
            guard sd_bus_message_exit_container(message) >= 0 else {
                throw .unexpectedReply("a container cannot be read")
            }
            return values
        }
        switch Unicode.Scalar(type) {
        case "y": return .byte(try basic(UInt8(0)))
        case "b": return .bool(try basic(Int32(0)) != 0)
        case "n": return .int16(try basic(Int16(0)))
        case "q": return .uint16(try basic(UInt16(0)))
        case "i": return .int32(try basic(Int32(0)))
        case "u": return .uint32(try basic(UInt32(0)))
        case "x": return .int64(try basic(Int64(0)))
        case "t": return .uint64(try basic(UInt64(0)))
        case "d": return .double(try basic(Double(0)))
        case "s", "o", "g":
            guard let pointer = try basic(UnsafePointer<CChar>?.none) else {
                throw .unexpectedReply("a string cannot be read")
            }
            let text = String(cString: pointer)
            return type == UInt8(ascii: "s")
                ? .string(text) : type == UInt8(ascii: "o") ? .objectPath(text) : .signature(text)
        case "a":
            let element = contents.map { String(cString: $0) } ?? ""
            return .array(elementSignature: element, try inside(UInt8(ascii: "a")))
        case "e":
            let fields = try inside(UInt8(ascii: "e"))
            guard fields.count == 2 else { throw .unexpectedReply("a dictionary entry without a key and a value") }
            return .dictionaryEntry(key: fields[0], value: fields[1])
        case "v":
            let inner = try inside(UInt8(ascii: "v"))
            guard inner.count == 1 else { throw .unexpectedReply("a variant without one value") }
            return .variant(inner[0])
        case "r": return .structure(try inside(UInt8(ascii: "r")))
        default:
            throw .unexpectedReply("a value of type \(Character(Unicode.Scalar(type))) is not supported")
        }
    }

    /// A negative errno as words (`Connection refused`), without its number.
    static func errorText(_ result: Int32) -> String {
        guard let text = strerror(-result) else { return "unknown error" }
        return String(cString: text)
    }
}
