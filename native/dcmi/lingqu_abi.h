// The 910A3 switch (LingQu bus) library `liblingqu-dcmi.so`: the declarations the agent uses, as spec dcmi-abi.md §8
// gives them (upstream's bundled header component/ascend-device-plugin/pkg/device/deviceswitch/library.h). The
// subscribe symbol takes the callback as its second argument (dcmi-abi.md §8), as upstream's loader calls it.
#ifndef ASCEND_NPU_AGENT_LINGQU_ABI_H
#define ASCEND_NPU_AGENT_LINGQU_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

// eventType carries the alarm id (printed 0x%08x in the assembled code, spec L.9); kept as the enum's int.
typedef int HalReportFaultType;
typedef int LqDcmiEventFilterFlag;

typedef struct LqDcmiEvent {
  HalReportFaultType eventType;
  unsigned int subType;
  unsigned short peerportDevice;
  unsigned short peerportId;
  unsigned short switchChipid;
  unsigned short switchPortid;
  unsigned char severity;
  unsigned char assertion;
  char res[6];
  unsigned int eventSerialNum;
  unsigned int notifySerialNum;
  unsigned long alarmRaisedTime;
  unsigned char additionalParam[40];
  char additionalInfo[32];
} LqDcmiEvent;

typedef struct lq_dcmi_event_filter {
  LqDcmiEventFilterFlag filterFlag;
  HalReportFaultType eventTypeId;
  unsigned int eventId;
  unsigned char severity;
  unsigned int chipId;
} LqDcmiEventFilter;

typedef void (*LqDcmiFaultEventCallback)(struct LqDcmiEvent *event);

int lq_dcmi_init(void);
int lq_dcmi_subscribe_fault_event(struct lq_dcmi_event_filter filter, LqDcmiFaultEventCallback handler);
int lq_dcmi_get_fault_info(unsigned int listLen, unsigned int *eventListLen, struct LqDcmiEvent *eventList);

// upstream's query size (dcmi-abi.md §8: listLen = 128)
#define LQ_MAX_FAULTS 128
// what "no fault id" looks like in subType (assembled as `na`)
#define LQ_SUBTYPE_NA 0xFFFFFFFFu

#ifdef __cplusplus
}
#endif

#endif
