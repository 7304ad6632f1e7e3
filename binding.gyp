{
  "targets": [
    {
      "target_name": "dcmi_addon",
      "sources": [
        "native/dcmi/dcmi_addon.cc",
        "native/dcmi/fault_channel.cc",
        "native/dcmi/lingqu_addon.cc",
        "native/dcmi/napi_util.cc"
      ],
      "include_dirs": [
        "native/dcmi"
      ],
      "dependencies": [
        "<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"
      ],
      "defines": [
        "NAPI_VERSION=8"
      ],
      "cflags_cc": [
        "-std=c++17",
        "-Wall",
        "-Wextra"
      ],
      "libraries": [
        "-ldl",
        "-lpthread"
      ]
    },
    {
      "target_name": "mock_dcmi",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_name": "dcmi",
      "sources": [
        "native/mock/mock_abi.c",
        "native/mock/mock_abi_v2.c",
        "native/mock/mock_control.c",
        "native/mock/mock_fields.c",
        "native/mock/mock_json.c",
        "native/mock/mock_model.c",
        "native/mock/mock_ports.c",
        "native/mock/mock_state.c",
        "native/mock/mock_switch.c",
        "native/mock/mock_vdevice.c"
      ],
      "include_dirs": [
        "native/dcmi",
        "native/mock"
      ],
      "cflags": [
        "-std=gnu11",
        "-pthread",
        "-Wall",
        "-Wextra"
      ],
      "ldflags": [
        "-pthread",
        "-Wl,-z,defs"
      ]
    },
    {
      "target_name": "mock_lingqu",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_name": "lingqu-dcmi",
      "sources": [
        "native/mock/mock_lingqu.c"
      ],
      "include_dirs": [
        "native/dcmi"
      ],
      "cflags": [
        "-std=gnu11",
        "-Wall",
        "-Wextra",
        "-fvisibility=hidden"
      ],
      "ldflags": [
        "-Wl,-z,defs"
      ],
      "libraries": [
        "-ldl"
      ]
    },
    {
      "target_name": "hccn_tool",
      "type": "executable",
      "sources": [
        "native/mock/hccn_tool.c",
        "native/mock/mock_json.c"
      ],
      "include_dirs": [
        "native/mock"
      ],
      "cflags": [
        "-std=gnu11",
        "-Wall",
        "-Wextra"
      ]
    },
    {
      "target_name": "dcmi_partial",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_name": "dcmi_partial",
      "sources": [
        "test/fixtures/native/partial_dcmi.c"
      ],
      "cflags": [
        "-std=gnu11",
        "-Wall",
        "-Wextra"
      ]
    },
    {
      "target_name": "dcmi_partial_v2",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_name": "dcmi_partial_v2",
      "sources": [
        "test/fixtures/native/partial_dcmi_v2.c"
      ],
      "cflags": [
        "-std=gnu11",
        "-Wall",
        "-Wextra"
      ]
    }
  ]
}
