import CSystemd

/// How an exported object answers one method call.
public enum DBusAnswer: Hashable, Sendable {
    /// A method return with these arguments.
    case reply([DBusValue])
    /// An error reply: `name` as `org.freedesktop.DBus.Error.UnknownMethod`, with a line for the caller.
    case error(name: String, message: String)

    /// The answer to a call of a method the object does not have.
    public static func unknownMethod(_ call: DBusMessage) -> DBusAnswer {
        .error(
            name: "org.freedesktop.DBus.Error.UnknownMethod",
            message: "no method \(call.interface ?? "?").\(call.member ?? "?") at \(call.path ?? "?")")
    }

    /// The answer to `org.freedesktop.DBus.Properties` calls for an object whose properties are `properties`, keyed
    /// by interface: `GetAll` and `Get` answer from it, `Set` is refused (read-only); nil for any other call.
    public static func properties(_ call: DBusMessage, _ properties: [String: [String: DBusValue]]) -> DBusAnswer? {
        guard call.interface == "org.freedesktop.DBus.Properties" else { return nil }
        var arguments = call.arguments
        switch call.member {
        case "GetAll":
            guard let interface = try? arguments.next(String.self) else { return .invalidArguments(call) }
            return .reply([.variantDictionary(properties[interface] ?? [:])])
        case "Get":
            guard let interface = try? arguments.next(String.self), let name = try? arguments.next(String.self) else {
                return .invalidArguments(call)
            }
            guard let value = properties[interface]?[name] else {
                return .error(
                    name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(interface).\(name)")
            }
            return .reply([.variant(value)])
        case "Set":
            return .error(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "the properties are read-only")
        default:
            return unknownMethod(call)
        }
    }

    static func invalidArguments(_ call: DBusMessage) -> DBusAnswer {
        .error(
            name: "org.freedesktop.DBus.Error.InvalidArgs",
            message: "\(call.interface ?? "?").\(call.member ?? "?") does not take \(call.signature)")
    }
}

extension DBusConnection {
    /// Exports an object at `path`: every method call to it, on any interface (`org.freedesktop.DBus.Properties`
    /// included), goes to `handler` on the bus thread, which answers at once without blocking; the answer is sent
    /// unless the caller asked for none. The object stays until `unexport()`, or until the connection ends.
    public func export(
        path: String, handler: @escaping @Sendable (DBusMessage) -> DBusAnswer
    ) async throws(DBusError) -> DBusExportedObject {
        let box = ExportBox(handler: handler)
        let loop = loop
        let result: Result<Void, DBusError> = await withCheckedContinuation { continuation in
            loop.submit { state in
                guard let bus = state?.bus else {
                    return continuation.resume(returning: .failure(.connection("it is closed")))
                }
                var slot: OpaquePointer? = nil
                let status = sd_bus_add_object(
                    bus, &slot, path, sdObjectCalled, Unmanaged.passUnretained(box).toOpaque())
                guard status >= 0 else {
                    return continuation.resume(
                        returning: .failure(.invalidMessage("object \(path): \(SDBusMessages.errorText(status))")))
                }
                box.slot = slot
                continuation.resume(returning: .success(()))
            }
        }
        try result.get()
        return DBusExportedObject(path: path, loop: loop, box: box)
    }
}

/// An object `DBusConnection.export(path:handler:)` put on the bus.
public final class DBusExportedObject: Sendable {
    public let path: String
    private let loop: BusLoop
    private let box: ExportBox

    init(path: String, loop: BusLoop, box: ExportBox) {
        self.path = path
        self.loop = loop
        self.box = box
    }

    /// Takes the object off the bus: later calls to it fail as unknown. Doing it twice does nothing.
    public func unexport() async {
        let box = box
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.submit { _ in
                box.dropSlot()
                continuation.resume()
            }
        }
    }

    deinit {
        let box = box
        loop.submit { _ in box.dropSlot() }
    }
}

/// An exported object's handler and sd-bus slot. The slot is touched only by the bus thread's jobs (or, once the
/// thread has ended, by the job run in its place), one at a time; the box outlives the slot, since the object and
/// its last job hold it.
final class ExportBox: @unchecked Sendable {
    let handler: @Sendable (DBusMessage) -> DBusAnswer
    var slot: OpaquePointer?

    init(handler: @escaping @Sendable (DBusMessage) -> DBusAnswer) { self.handler = handler }

    func dropSlot() {
        guard let slot else { return }
        sd_bus_slot_unref(slot)
        self.slot = nil
    }
}

private func sdObjectCalled(
    _ message: OpaquePointer?, _ userData: UnsafeMutableRawPointer?, _ replyError: UnsafeMutablePointer<sd_bus_error>?
) -> Int32 {
    guard let message, let userData, sd_bus_message_is_method_call(message, nil, nil) > 0 else { return 0 }
    let box = Unmanaged<ExportBox>.fromOpaque(userData).takeUnretainedValue()
    let answer: DBusAnswer
    do {
        answer = box.handler(try SDBusMessages.read(message))
    } catch {
        return sd_bus_error_set(replyError, "org.freedesktop.DBus.Error.InvalidArgs", "the arguments cannot be read")
    }
    switch answer {
    case .reply(let values):
        guard sd_bus_message_get_expect_reply(message) > 0 else { return 1 }
        var reply: OpaquePointer? = nil
        var status = sd_bus_message_new_method_return(message, &reply)
        defer { sd_bus_message_unref(reply) }
        if status >= 0, let reply { status = SDBusMessages.append(values, to: reply) }
        if status >= 0 { status = sd_bus_send(nil, reply, nil) }
        return status < 0 ? status : 1
    case .error(let name, let text):
        return sd_bus_error_set(replyError, name, text)
    }
}
