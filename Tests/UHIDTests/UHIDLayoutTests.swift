import CUHIDHeader
import Testing
import UHID

/// Pins ``UHIDLayout`` to `<linux/uhid.h>` as the C compiler sees it.
struct UHIDLayoutTests {
    @Test func eventSizeAndUnion() {
        #expect(cuhid_little_endian() == 1)
        #expect(UHIDLayout.eventSize == cuhid_event_size())
        #expect(UHIDLayout.eventSize == 4380)
        #expect(UHIDLayout.typeSize == cuhid_union_offset())
        #expect(UHIDLayout.dataMaximum == cuhid_data_max())
        #expect(UHIDLayout.descriptorMaximum == cuhid_descriptor_max())
        #expect(Int(FIDOHIDDevice.busUSB) == cuhid_bus_usb())
    }

    @Test func eventTypes() {
        typealias T = UHIDLayout.EventType
        let pairs: [(UInt32, Int)] = [
            (T.destroy, cuhid_type_destroy()), (T.start, cuhid_type_start()), (T.stop, cuhid_type_stop()),
            (T.open, cuhid_type_open()), (T.close, cuhid_type_close()), (T.output, cuhid_type_output()),
            (T.getReport, cuhid_type_get_report()), (T.getReportReply, cuhid_type_get_report_reply()),
            (T.create2, cuhid_type_create2()), (T.input2, cuhid_type_input2()),
            (T.setReport, cuhid_type_set_report()), (T.setReportReply, cuhid_type_set_report_reply()),
        ]
        for (swift, c) in pairs { #expect(Int(swift) == c) }
        #expect(
            [T.destroy, T.start, T.stop, T.open, T.close, T.output, T.create2, T.input2] == [1, 2, 3, 4, 5, 6, 11, 12])
        #expect(Int(UHIDReportType.feature.rawValue) == cuhid_report_feature())
        #expect(Int(UHIDReportType.output.rawValue) == cuhid_report_output())
        #expect(Int(UHIDReportType.input.rawValue) == cuhid_report_input())
    }

    @Test func create2() {
        typealias C = UHIDLayout.Create2
        #expect(C.size == cuhid_create2_size())
        #expect(C.nameOffset == cuhid_create2_name())
        #expect(C.physOffset == cuhid_create2_phys())
        #expect(C.uniqOffset == cuhid_create2_uniq())
        #expect(C.rdSizeOffset == cuhid_create2_rd_size())
        #expect(C.busOffset == cuhid_create2_bus())
        #expect(C.vendorOffset == cuhid_create2_vendor())
        #expect(C.productOffset == cuhid_create2_product())
        #expect(C.versionOffset == cuhid_create2_version())
        #expect(C.countryOffset == cuhid_create2_country())
        #expect(C.rdDataOffset == cuhid_create2_rd_data())
    }

    @Test func reports() {
        #expect(UHIDLayout.Input2.size == cuhid_input2_size_of())
        #expect(UHIDLayout.Input2.sizeOffset == cuhid_input2_size())
        #expect(UHIDLayout.Input2.dataOffset == cuhid_input2_data())
        #expect(UHIDLayout.Output.size == cuhid_output_size_of())
        #expect(UHIDLayout.Output.dataOffset == cuhid_output_data())
        #expect(UHIDLayout.Output.sizeOffset == cuhid_output_size())
        #expect(UHIDLayout.Output.rtypeOffset == cuhid_output_rtype())
        #expect(UHIDLayout.Start.size == cuhid_start_size_of())
        #expect(UHIDLayout.Start.devFlagsOffset == cuhid_start_dev_flags())
    }

    @Test func getAndSetReport() {
        #expect(UHIDLayout.GetReport.size == cuhid_get_report_size_of())
        #expect(UHIDLayout.GetReport.idOffset == cuhid_get_report_id())
        #expect(UHIDLayout.GetReport.rnumOffset == cuhid_get_report_rnum())
        #expect(UHIDLayout.GetReport.rtypeOffset == cuhid_get_report_rtype())
        #expect(UHIDLayout.GetReportReply.size == cuhid_get_report_reply_size_of())
        #expect(UHIDLayout.GetReportReply.idOffset == cuhid_get_report_reply_id())
        #expect(UHIDLayout.GetReportReply.errOffset == cuhid_get_report_reply_err())
        #expect(UHIDLayout.GetReportReply.sizeOffset == cuhid_get_report_reply_size())
        #expect(UHIDLayout.GetReportReply.dataOffset == cuhid_get_report_reply_data())
        #expect(UHIDLayout.SetReport.size == cuhid_set_report_size_of())
        #expect(UHIDLayout.SetReport.idOffset == cuhid_set_report_id())
        #expect(UHIDLayout.SetReport.rnumOffset == cuhid_set_report_rnum())
        #expect(UHIDLayout.SetReport.rtypeOffset == cuhid_set_report_rtype())
        #expect(UHIDLayout.SetReport.sizeOffset == cuhid_set_report_size())
        #expect(UHIDLayout.SetReport.dataOffset == cuhid_set_report_data())
        #expect(UHIDLayout.SetReportReply.size == cuhid_set_report_reply_size_of())
        #expect(UHIDLayout.SetReportReply.idOffset == cuhid_set_report_reply_id())
        #expect(UHIDLayout.SetReportReply.errOffset == cuhid_set_report_reply_err())
    }
}
