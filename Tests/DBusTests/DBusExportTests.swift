import DBus
import Synchronization
import Testing
import TestSupport

@Suite("DBus exported objects (private dbus-daemon)")
struct DBusExportTests {
    @Test("an exported object answers method calls and properties until it is unexported")
    func exportedObjectAnswers() async throws {
        let bus = try await PrivateBusDaemon()
        let server = try await DBusConnection.open(.address(bus.address))
        let client = try await DBusConnection.open(.address(bus.address))
        let calls = Mutex<[String]>([])
        let object = try await server.export(path: "/org/passkey/Test") { call in
            calls.withLock { $0.append("\(call.interface ?? "").\(call.member ?? "")") }
            if let answer = DBusAnswer.properties(
                call, ["org.passkey.Test": ["Name": .string("test"), "Count": .uint32(2)]])
            {
                return answer
            }
            if call.interface == "org.passkey.Test" && call.member == "Echo" { return .reply(call.body) }
            return .unknownMethod(call)
        }
        func method(_ interface: String, _ member: String) -> DBusMethod {
            DBusMethod(destination: server.uniqueName, path: "/org/passkey/Test", interface: interface, member: member)
        }
        let echoed = try await client.call(method("org.passkey.Test", "Echo"), [.string("hello"), .bytes([1, 2])])
        #expect(echoed.body == [.string("hello"), .bytes([1, 2])])

        var all = try await client.call(
            method("org.freedesktop.DBus.Properties", "GetAll"), [.string("org.passkey.Test")]
        ).arguments
        #expect(try all.next([String: DBusValue].self) == ["Name": .string("test"), "Count": .uint32(2)])
        var one = try await client.call(
            method("org.freedesktop.DBus.Properties", "Get"), [.string("org.passkey.Test"), .string("Count")]
        ).arguments
        #expect(try one.next(UInt32.self) == 2)
        await #expect(
            throws: DBusError.remote(
                name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "the properties are read-only")
        ) {
            _ = try await client.call(
                method("org.freedesktop.DBus.Properties", "Set"),
                [.string("org.passkey.Test"), .string("Count"), .variant(.uint32(3))])
        }
        do {
            _ = try await client.call(method("org.passkey.Test", "Missing"))
            Issue.record("an unknown method was answered")
        } catch {
            #expect((error as? DBusError)?.remoteName == "org.freedesktop.DBus.Error.UnknownMethod")
        }

        await object.unexport()
        await object.unexport()
        do {
            _ = try await client.call(method("org.passkey.Test", "Echo"), [.string("again")])
            Issue.record("an unexported object was answered")
        } catch {
            #expect((error as? DBusError)?.remoteName != nil)
        }
        #expect(calls.withLock { $0 }.count == 5)
        await client.close()
        await server.close()
    }
}
