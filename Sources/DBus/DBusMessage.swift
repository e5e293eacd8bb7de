/// A message read off the bus, copied out of sd-bus whole: a method reply, an error, a signal or (for an exported
/// object, later) a method call.
public struct DBusMessage: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        case methodCall, methodReturn, error, signal
    }

    public var kind: Kind
    /// The unique name (`:1.42`) of the connection that sent it.
    public var sender: String?
    public var destination: String?
    public var path: String?
    public var interface: String?
    public var member: String?
    /// An error's name (`org.freedesktop.DBus.Error.ServiceUnknown`).
    public var errorName: String?
    /// The serial number the sender gave it (the one a reply answers).
    public var serial: UInt64
    public var body: [DBusValue]

    public init(
        kind: Kind, sender: String? = nil, destination: String? = nil, path: String? = nil, interface: String? = nil,
        member: String? = nil, errorName: String? = nil, serial: UInt64 = 0, body: [DBusValue] = []
    ) {
        self.kind = kind
        self.sender = sender
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.errorName = errorName
        self.serial = serial
        self.body = body
    }

    /// The body's signature.
    public var signature: String { body.map(\.signature).joined() }

    /// The body read argument by argument.
    public var arguments: DBusArguments { DBusArguments(body) }
}

/// Where a method call goes.
public struct DBusMethod: Hashable, Sendable {
    /// The bus name of the service (`org.freedesktop.Notifications`, or a unique name).
    public var destination: String
    public var path: String
    public var interface: String
    public var member: String

    public init(destination: String, path: String, interface: String, member: String) {
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
    }
}

/// Why a D-Bus exchange failed. `description` is a line for a person (no errno number); the bus's own error name
/// is kept for code that tells one failure from another.
public enum DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No bus address: neither the argument, `DBUS_SESSION_BUS_ADDRESS` nor `$XDG_RUNTIME_DIR/bus`.
    case noBus(String)
    /// The connection could not be made or has ended.
    case connection(String)
    /// The peer answered with an error (`name` as `org.freedesktop.DBus.Error.ServiceUnknown`).
    case remote(name: String, message: String)
    /// No reply within the call's timeout.
    case timedOut
    /// The reply has another shape than expected.
    case unexpectedReply(String)
    /// A message could not be built (a value sd-bus refuses, such as an invalid object path).
    case invalidMessage(String)

    public var description: String {
        switch self {
        case .noBus(let why): "no D-Bus bus: \(why)"
        case .connection(let why): "D-Bus connection failed: \(why)"
        case .remote(let name, let message): message.isEmpty ? name : "\(message) (\(name))"
        case .timedOut: "no D-Bus reply in time"
        case .unexpectedReply(let why): "unexpected D-Bus reply: \(why)"
        case .invalidMessage(let why): "D-Bus message not built: \(why)"
        }
    }

    /// The D-Bus error name when the peer answered with an error.
    public var remoteName: String? { if case .remote(let name, _) = self { name } else { nil } }

    /// Whether nobody owns the name the call went to (`ServiceUnknown`, `NameHasNoOwner`), or the service could not
    /// be started for it.
    public var isNoService: Bool {
        switch remoteName {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
            "org.freedesktop.DBus.Error.Spawn.ServiceNotFound", "org.freedesktop.DBus.Error.Spawn.ExecFailed",
            "org.freedesktop.DBus.Error.Spawn.ChildExited", "org.freedesktop.DBus.Error.Spawn.ChildSignaled":
            true
        default: false
        }
    }
}

/// A match rule (the D-Bus specification's "Match Rules"): which signals a subscription receives.
public struct DBusMatchRule: Hashable, Sendable, CustomStringConvertible {
    public var sender: String?
    public var path: String?
    public var interface: String?
    public var member: String?
    /// The first argument, when it is a string (`arg0`): for example the name in `NameOwnerChanged`.
    public var argument0: String?

    public init(
        sender: String? = nil, path: String? = nil, interface: String? = nil, member: String? = nil,
        argument0: String? = nil
    ) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.argument0 = argument0
    }

    /// The rule's text: `type='signal',interface='…',member='…'`, each value quoted as the specification says
    /// (an apostrophe as `'\''`).
    public var description: String {
        var parts = ["type='signal'"]
        for (key, value) in [
            ("sender", sender), ("path", path), ("interface", interface), ("member", member), ("arg0", argument0),
        ] {
            guard let value else { continue }
            parts.append("\(key)='" + value.replacing("'", with: "'\\''") + "'")
        }
        return parts.joined(separator: ",")
    }
}

/// Which bus to connect to.
public enum DBusBus: Hashable, Sendable {
    /// The person's session bus: `DBUS_SESSION_BUS_ADDRESS`, else `unix:path=$XDG_RUNTIME_DIR/bus`.
    case session
    /// The system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else `/run/dbus/system_bus_socket`).
    case system
    /// A bus at this address (`unix:path=…`, `unix:abstract=…`), as a client of its daemon.
    case address(String)

    /// The session bus's address in `environment`, or nil when it names none: `DBUS_SESSION_BUS_ADDRESS` when it
    /// is set and not empty, else the socket `bus` in `XDG_RUNTIME_DIR` (as sd-bus and GLib look for it) when
    /// `socketExists` says it is there.
    public static func sessionAddress(
        environment: [String: String], socketExists: (String) -> Bool
    ) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        let path = (runtime.hasSuffix("/") ? String(runtime.dropLast()) : runtime) + "/bus"
        return socketExists(path) ? "unix:path=" + escapedAddressValue(path) : nil
    }

    /// A D-Bus address value with the bytes outside `[-0-9A-Za-z_/.\*]` as `%XX`.
    static func escapedAddressValue(_ text: String) -> String {
        var escaped = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "/"), UInt8(ascii: "."), UInt8(ascii: "\\"),
                UInt8(ascii: "*"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "a")...UInt8(ascii: "z"):
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789abcdef")
                escaped += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0xF)])
            }
        }
        return escaped
    }
}
