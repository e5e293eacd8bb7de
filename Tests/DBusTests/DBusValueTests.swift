import DBus
import Testing

@Suite("DBus values, match rules and addresses")
struct DBusValueTests {
    @Test("signatures of every shape")
    func signatures() {
        #expect(DBusValue.strings([]).signature == "as")
        #expect(DBusValue.bytes([1]).signature == "ay")
        #expect(DBusValue.variantDictionary([:]).signature == "a{sv}")
        #expect(DBusValue.stringDictionary(["a": "b"]).signature == "a{ss}")
        #expect(DBusValue.structure([.int32(1), .strings(["a"])]).signature == "(ias)")
        #expect(DBusValue.variant(.uint64(1)).signature == "v")
        #expect(DBusValue.array(elementSignature: "a{sv}", []).signature == "aa{sv}")
    }

    @Test("a dictionary is written in its keys' order and read back with variants unwrapped")
    func dictionaries() {
        let value = DBusValue.variantDictionary(["b": .int32(2), "a": .string("x")])
        #expect(
            value
                == .array(
                    elementSignature: "{sv}",
                    [
                        .dictionaryEntry(key: .string("a"), value: .variant(.string("x"))),
                        .dictionaryEntry(key: .string("b"), value: .variant(.int32(2))),
                    ]))
        #expect(value.dictionaryValue == ["a": .string("x"), "b": .int32(2)])
        #expect(DBusValue.strings(["a"]).dictionaryValue == nil)
        #expect(DBusValue.variant(.uint32(3)).uint32Value == 3)
        #expect(DBusValue.bytes([1, 2]).bytesValue == [1, 2])
        #expect(DBusValue.array(elementSignature: "v", [.variant(.byte(1)), .variant(.string("x"))]).bytesValue == nil)
    }

    @Test("arguments are read in order, each as the type asked for")
    func arguments() throws {
        var arguments = DBusArguments([.uint32(7), .string("allow")])
        #expect(try arguments.next(UInt32.self) == 7)
        #expect(throws: DBusError.self) { try arguments.next(UInt32.self) }
        #expect(try arguments.next(String.self) == "allow")
        #expect(throws: DBusError.self) { try arguments.next(String.self) }
    }

    @Test("match rules quote their values")
    func matchRules() {
        #expect(
            DBusMatchRule(interface: "org.freedesktop.Notifications", member: "ActionInvoked").description
                == "type='signal',interface='org.freedesktop.Notifications',member='ActionInvoked'")
        #expect(
            DBusMatchRule(sender: "org.freedesktop.DBus", path: "/a", argument0: "it's").description
                == "type='signal',sender='org.freedesktop.DBus',path='/a',arg0='it'\\''s'")
    }

    @Test("the session bus: the variable, else the runtime directory's socket, else none")
    func sessionAddress() {
        #expect(
            DBusBus.sessionAddress(
                environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/x", "XDG_RUNTIME_DIR": "/run/user/1"],
                socketExists: { _ in true }) == "unix:path=/tmp/x")
        #expect(
            DBusBus.sessionAddress(
                environment: ["DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": "/run/user/1000/"],
                socketExists: { $0 == "/run/user/1000/bus" }) == "unix:path=/run/user/1000/bus")
        #expect(
            DBusBus.sessionAddress(
                environment: ["XDG_RUNTIME_DIR": "/run/a b,c"], socketExists: { _ in true })
                == "unix:path=/run/a%20b%2cc/bus")
        #expect(
            DBusBus.sessionAddress(environment: ["XDG_RUNTIME_DIR": "/run/user/1"], socketExists: { _ in false }) == nil
        )
        #expect(
            DBusBus.sessionAddress(environment: ["XDG_RUNTIME_DIR": "relative"], socketExists: { _ in true }) == nil)
        #expect(DBusBus.sessionAddress(environment: [:], socketExists: { _ in true }) == nil)
    }

    @Test("errors for people: no errno numbers; missing services told apart")
    func errors() {
        #expect(DBusError.remote(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "").isNoService)
        #expect(!DBusError.remote(name: "org.freedesktop.DBus.Error.AccessDenied", message: "no").isNoService)
        #expect(!DBusError.timedOut.isNoService)
        #expect(DBusError.timedOut.description == "no D-Bus reply in time")
        #expect(
            DBusError.remote(name: "org.x.Error", message: "it failed").description == "it failed (org.x.Error)")
    }
}
